"""The catalogue as a whole: coverage of the taxonomy, the named signatures, and sound references."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
import regex

from sparktui.core import catalogue as cat
from sparktui.core.events import Severity
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy import render as rd
from sparktui.core.search.literals import required_literals
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
        assert sig.path.stem == (sig.family_of or sig.id)
        assert not sig.family_of or sig.id.startswith(f"{sig.family_of}-")


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


def test_every_playbook_a_signature_offers_exists(catalogue: cat.Catalogue) -> None:
    books = pb.load_all()
    missing = sorted(f"{s.id} -> {ref}" for s in catalogue.signatures for ref in s.playbooks if ref not in books)
    assert not missing, missing


PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@pytest.mark.parametrize("book", sorted(pb.load_all().values(), key=lambda b: b.id), ids=lambda b: b.id)
def test_every_playbook_renders_from_its_example(book: pb.Playbook) -> None:
    assert book.example_nodes, f"{book.id}: [example] needs nodes (head first)"
    nodes = rd.HeadAndWorkers(book.example_nodes[0], book.example_nodes[1:])
    rendered = rd.render(book, rd.resolve(book, {}, None, book.example), nodes)
    assert {c.step for c in rendered.commands} >= {s.title for s in book.steps if s.on != "workers" or nodes.workers}
    # every command, and the step inside a container's `sh -c`, is valid shell
    for command in (*rendered.commands, *rendered.rollback):
        scripts = [command.command]
        if command.place == "container":
            scripts.append(shlex.split(command.command)[-1])
        for script in scripts:
            check = subprocess.run(["sh", "-n", "-c", script], capture_output=True, text=True)
            assert check.returncode == 0, f"{book.id}: {command.step}: {check.stderr}"
    declared = {p.name for p in book.params} | {"node", "head"}
    for text in book.verify.templates:
        assert set(PLACEHOLDER.findall(text)) <= declared, f"{book.id}: verify: {text}"


def facts_of(sig: cat.Signature, catalogue: cat.Catalogue) -> set[str]:
    """The facts a finding of ``sig`` can carry: its patterns' named groups, or for a stall, its track's and
    the stall's own."""
    if sig.stall is None:
        return {name for p in sig.any for name in regex.compile(p).groupindex}
    track = catalogue.track(sig.stall.track)
    named = {name for s in track.stages for p in s.any for name in regex.compile(p).groupindex}
    return named | {"stopped_at", "ranks_never_started"}


@pytest.mark.parametrize("book", sorted(pb.load_all().values(), key=lambda b: b.id), ids=lambda b: b.id)
def test_every_fact_a_playbook_takes_comes_from_a_signature_that_offers_it(
    book: pb.Playbook, catalogue: cat.Catalogue
) -> None:
    """A `fact:NAME` source is only true to its word if some signature offering the playbook captures NAME
    (renaming a capture group would otherwise fall back to the default in silence)."""
    offering = [s for s in catalogue.signatures if book.id in s.playbooks]
    captured = set().union(*(facts_of(s, catalogue) for s in offering)) if offering else set()
    for param in book.params:
        for source in param.sources:
            if source.startswith("fact:"):
                fact = source.partition(":")[2]
                assert fact in captured, (
                    f"{book.id}: params.{param.name} takes fact:{fact}, which no signature offering it captures"
                )
