"""One test per advisory file of diagnostics/advisories/ (known-bad releases): it loads through the checks'
loader, its examples behave as declared (facts in; versions seen in a log), the runtime findings it names
exist, its words and source are there; and a broken advisory is refused in one line naming file and key."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat
from sparktui.core.catalogue import CatalogueError
from sparktui.core.inventory import rules

ADVISORIES = rules.advisories(rules.builtin())
SIGNATURES = {s.id for s in cat.load().signatures}
#: Known-bad releases the pre-launch check must name (issue 28), by id.
NAMED = {
    "nccl-2-30-nvls-hang-without-nvlink",  # NCCL 2.30.4's NVLS path on GB10
    "nvidia-nccl-cu12-2-21-5-moe-multinode",
    "nccl-2-28-9-proxy-wedge-aarch64",
    "nccl-before-2-21-5-gid-index-0",
    "kernel-7-0-0-1019-nvidia-kho-cma",
    "torch-sm121-capability-warning",
}

GOOD = """
id = "my-advisory"
component = "nccl"
affected = ">= 2.30.4, <= 2.30.7"
verdict = "slow"
category = "nccl_multinode_hang"
title = "A made-up advisory to test the loader"
symptom = "Made up for the tests: it hangs, so that one key at a time can be broken below."
fix = "Use another release."
source = "https://example.org/report"
date = "2026-05-10"
[[examples]]
facts = { "probe.nccl" = "2.30.4" }
fires = true
[[examples]]
facts = { "probe.nccl" = "2.30.3" }
fires = false
"""


@pytest.mark.parametrize("rule", ADVISORIES, ids=[r.id for r in ADVISORIES])
def test_advisory_examples_and_the_findings_it_names(rule: rules.Rule) -> None:
    assert rules.check_examples(rule) == []
    assert rule.advisory is not None
    assert set(rule.advisory.signatures) <= SIGNATURES
    if rule.advisory.signatures:  # attached at run time: the logs must print the version somewhere
        assert rule.advisory.log_fact and any(e.seen for e in rule.examples)


@pytest.mark.parametrize("rule", ADVISORIES, ids=[r.id for r in ADVISORIES])
def test_advisory_words(rule: rules.Rule) -> None:
    assert rule.advisory is not None and rule.scope == "node" and not rule.playbooks
    assert len(rule.advisory.symptom) > 40 and len(rule.fix) > 15
    assert rule.references == (rule.advisory.source,) and rule.advisory.source.startswith("https://")
    assert rule.title.strip() == rule.title and not rule.title.endswith(".")


def test_the_named_advisories_exist() -> None:
    assert {r.id for r in ADVISORIES} >= NAMED


def test_a_firing_advisory_says_the_version_and_where_it_applies_its_fix_and_source() -> None:
    rule = next(r for r in ADVISORIES if r.id == "nccl-2-30-nvls-hang-without-nvlink")
    facts = {"probe.nccl": "2.30.4", "gpu.compute_capability": "12.1", "cluster.nodes": 2, "node.name": "spark-a"}
    outcome = rules.run_node(rule, "spark-a", facts, {})
    assert outcome.fired is True
    assert outcome.detail == (
        "NCCL 2.30.4 on spark-a: in the affected range (>= 2.30.4, <= 2.30.7), across nodes of GB10 GPUs"
        " (DGX Spark: no NVLink) with NCCL_NVLS_ENABLE not 0"
    )
    assert "NCCL_NVLS_ENABLE=0" in rule.fix and "https://github.com/NVIDIA/nccl/issues/2167" in rule.why


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (('affected = ">= 2.30.4, <= 2.30.7"', 'affected = "2.30.x"'), "affected"),
        (('source = "https://example.org/report"', 'source = "a forum"'), "source"),
        (('date = "2026-05-10"', 'date = "May 2026"'), "date"),
        (('component = "nccl"', 'component = "cuda"'), "component"),
        (('fix = "Use another release."', 'fix = "Set {x}."'), "fix"),
        (('verdict = "slow"', 'verdict = "slow"\ncondition = "cluster.nodes > 1"'), "applies"),
        (('verdict = "slow"', 'verdict = "slow"\ncondition = "nodes > 1"\napplies = "x"'), "condition"),
    ],
)
def test_a_broken_advisory_is_refused_naming_the_key(tmp_path: Path, change: tuple[str, str], key: str) -> None:
    path = tmp_path / "my-advisory.toml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(CatalogueError) as caught:
        rules.load_rule(path)
    assert caught.value.key == key and str(path) in str(caught.value)


def test_catalogue_test_runs_the_advisories_and_fails_a_wrong_example(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["catalogue", "test", str(rules.advisories_dir())]) == 0
    assert f"{len(ADVISORIES)} passed, 0 failed" in capsys.readouterr().out
    folder = tmp_path / "advisories"
    folder.mkdir()
    (folder / "my-advisory.toml").write_text(GOOD.replace('"2.30.3" }\nfires = false', '"2.30.5" }\nfires = false'))
    assert main(["catalogue", "test", str(folder)]) == 1
    said = capsys.readouterr().out
    assert "my-advisory.toml: examples[1]: fired, but must not fire" in said and "0 passed, 1 failed" in said


def test_the_catalogue_with_its_advisories_pickles_for_the_scan_workers() -> None:
    loaded = cat.load()
    assert pickle.loads(pickle.dumps(loaded)).advisories == loaded.advisories and len(loaded.advisories) == len(
        ADVISORIES
    )
