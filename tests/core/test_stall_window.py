"""A rank "behind its peers" in one log that interleaves the ranks' start-up (issue 40, item 4): behind only
where the peers' lines go on well past its last one; in a window cut in mid start-up, nothing stronger than
info. The lines are the real capture tests/fixtures/nccl4/four-hosts-healthy-eager, merged as one log would
merge them, with rank 0 cut inside its first communicator's init while its peers completed it."""

from __future__ import annotations

from itertools import zip_longest

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.stages import WENT_ON_LINES
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Severity

from ..conftest import FIXTURES

HEALTHY = FIXTURES / "nccl4" / "four-hosts-healthy-eager"
#: Rank 0's lines up to inside its first communicator's init (Init START at 16, COMPLETE at 35), and the peers'
#: up to past their Init COMPLETE (33).
RANK0_TO, PEERS_TO = 30, 45


def _ranks() -> list[list[str]]:
    return [(HEALTHY / f"rank{r}.log").read_text(encoding="utf-8").splitlines() for r in range(4)]


def _merged(parts: list[list[str]]) -> list[str]:
    return [line for row in zip_longest(*parts) for line in row if line is not None]


def _diagnose(catalogue: Catalogue, lines: list[str]) -> Diagnosis:
    analyzer = Analyzer(catalogue)
    analyzer.add_source("window.log", "")
    analyzer.feed("window.log", "\n".join(lines))
    return analyzer.finish()


def _behind(diagnosis: Diagnosis) -> list[tuple[str, Severity, str]]:
    return [(f.signature, f.severity, f.detail) for f in diagnosis.findings if f.category == "nccl_multinode_hang"]


def test_a_window_cut_in_mid_start_up_is_no_hang(catalogue: Catalogue) -> None:
    ranks = _ranks()
    window = _merged([ranks[0][:RANK0_TO], *(r[:PEERS_TO] for r in ranks[1:])])
    after = len(window) - window.index(ranks[0][RANK0_TO - 1]) - 1
    assert after < WENT_ON_LINES
    found = _behind(_diagnose(catalogue, window))
    assert found, "rank 0 still reads as stopped where its peers got further"
    assert all(severity == Severity.INFO for _, severity, _ in found)
    assert all("a window of interleaved start-up lines cut there" in detail for _, _, detail in found)
    assert not [f for f in _diagnose(catalogue, window).findings if f.severity > Severity.INFO]


def test_peers_whose_lines_go_on_well_past_it_say_it_is_behind(catalogue: Catalogue) -> None:
    ranks = _ranks()
    went_on = _merged([ranks[0][:RANK0_TO], *ranks[1:]])
    after = len(went_on) - went_on.index(ranks[0][RANK0_TO - 1]) - 1
    assert after >= WENT_ON_LINES
    found = _behind(_diagnose(catalogue, went_on))
    assert found and max(severity for _, severity, _ in found) >= Severity.ERROR
