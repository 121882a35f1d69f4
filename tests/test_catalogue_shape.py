"""The catalogue as a whole: coverage of the taxonomy, the named signatures, and sound references."""

from __future__ import annotations

from sparktui.core import catalogue as cat
from sparktui.core.events import Severity
from sparktui.core.literals import required_literals
from sparktui.core.taxonomy import CATEGORIES

NAMED = {
    # the NCCL second-communicator / second-process-group deadlock
    "nccl-second-communicator-not-joined",
    "sglang-distributed-init-stalled",
    # multi-node tensor parallelism without the Ray executor
    "vllm-world-size-exceeds-local-gpus",
    "vllm-ray-not-installed",
    "vllm-placement-group-pending",
    "ray-infeasible-resource-request",
    # version-incompatible model files
    "model-arch-not-supported",
    "transformers-unknown-model-type",
}


def test_at_least_forty_signatures_covering_every_category(catalogue: cat.Catalogue) -> None:
    assert len(catalogue.signatures) >= 40
    assert {s.category for s in catalogue.signatures} == set(CATEGORIES)


def test_named_signatures_exist(catalogue: cat.Catalogue) -> None:
    assert {s.id for s in catalogue.signatures} >= NAMED


def test_ids_are_unique_and_match_files(catalogue: cat.Catalogue) -> None:
    ids = [s.id for s in catalogue.signatures]
    assert len(ids) == len(set(ids))
    for sig in catalogue.signatures:
        assert sig.path.stem == sig.id


def test_every_pattern_has_a_required_literal(catalogue: cat.Catalogue) -> None:
    for sig in catalogue.signatures:
        for pattern in sig.any:
            assert required_literals(pattern), f"{sig.id}: {pattern}"


def test_explanations_are_present(catalogue: cat.Catalogue) -> None:
    for sig in catalogue.signatures:
        assert len(sig.what) > 30 and len(sig.why) > 30, sig.id
        assert sig.title.strip() == sig.title and not sig.title.endswith("."), sig.id


def test_consequence_references_resolve(catalogue: cat.Catalogue) -> None:
    ids = {s.id for s in catalogue.signatures}
    for sig in catalogue.signatures:
        for ref in sig.consequence_of:
            assert ref in CATEGORIES or ref in ids, f"{sig.id}: {ref}"


def test_stall_signatures_reference_known_stages(catalogue: cat.Catalogue) -> None:
    stalls = [s for s in catalogue.signatures if s.stall is not None]
    assert stalls
    for sig in stalls:
        assert sig.stall is not None
        track = catalogue.track(sig.stall.track)
        assert track.index(sig.stall.reached) < track.index(sig.stall.not_reached)


def test_severities_are_known(catalogue: cat.Catalogue) -> None:
    assert all(isinstance(s.severity, Severity) for s in catalogue.signatures)
