"""Advisories (known-bad releases) where they show: a pre-launch check over the inventories captured on the
spark test nodes, with the image's versions and GPU set to the affected ones; and a runtime finding of real
logs whose NCCL printed an affected version."""

from __future__ import annotations

from dataclasses import replace

from sparktui.commands.common import catalogue
from sparktui.core.analysis.advisories import attach
from sparktui.core.inventory import parse, rules
from sparktui.core.inventory.facts import Gpu, ImageFacts, NodeInventory
from sparktui.core.inventory.preflight import judge
from sparktui.core.pipeline import diagnose_files
from sparktui.core.sources.open import file_sources

from ..conftest import ROOT
from .test_inventory import captured

#: Two ranks on two hosts that ran different collectives; their NCCL printed 'NCCL version 2.28.9+cuda13.0'.
MISMATCHED = ROOT / "tests" / "fixtures" / "nccl" / "two-hosts-mismatched-collectives"
ADVISORIES = catalogue([]).advisories
GB10 = Gpu(0, "NVIDIA GB10", None, "580.95.05", "12.1", "0000000F:01:00.0")


def spark(name: str, nccl: str, env: dict[str, str] | None = None) -> NodeInventory:
    """A captured spark test node as a GB10 whose image holds ``nccl`` (the probe's versions are replaced)."""
    packages = {"torch": "2.9.1+cu130", "nccl": nccl}
    probe = ImageFacts(via="container vllm_node", packages=packages, nccl=nccl, env=env or {})
    return replace(captured(name), gpus=(GB10,), probe=probe, arch="aarch64")


def test_an_affected_nccl_on_a_gb10_pair_is_named_with_its_fix_and_slows_the_verdict() -> None:
    result = judge([spark("spark-a", "2.30.4"), spark("spark-b", "2.30.4")], {"spark-a"}, None, rules.builtin())
    found = {f.signature: f for f in result.findings}
    nvls = found["nccl-2-30-nvls-hang-without-nvlink"]
    assert nvls.nodes == ("spark-a", "spark-b") and nvls.verdict == "slow"
    assert nvls.detail.startswith("NCCL 2.30.4 on spark-a: in the affected range (>= 2.30.4, <= 2.30.7), across")
    assert "NCCL_NVLS_ENABLE=0" in nvls.facts["fix"]
    assert nvls.facts["advisory"] == "https://github.com/NVIDIA/nccl/issues/2167 (2026-05-10)"
    assert "torch-sm121-capability-warning" in found  # advice: the warning torch prints there is harmless
    assert all(verdict != "ready" for verdict in result.verdicts.values())


def test_the_workaround_in_the_container_and_a_good_release_are_not_named() -> None:
    worked_around = [spark(n, "2.30.4", {"NCCL_NVLS_ENABLE": "0"}) for n in ("spark-a", "spark-b")]
    result = judge(worked_around, {"spark-a"}, None, rules.builtin())
    assert "nccl-2-30-nvls-hang-without-nvlink" not in {f.signature for f in result.findings}
    good = judge([spark("spark-a", "2.29.7"), spark("spark-b", "2.29.7")], {"spark-a"}, None, rules.builtin())
    assert not [f for f in good.findings if f.signature.startswith(("nccl-", "nvidia-nccl"))]


def test_a_wedge_in_real_logs_that_printed_an_affected_nccl_names_the_advisory() -> None:
    sources, _ = file_sources([str(MISMATCHED)])
    findings = {f.signature: f for f in diagnose_files(sources, catalogue([])).findings}
    watchdog = findings["torch-nccl-watchdog-timeout"]
    assert watchdog.facts["advisories"] == "nccl-2-28-9-proxy-wedge-aarch64"
    assert "(advisory nccl-2-28-9-proxy-wedge-aarch64): NCCL 2.28.9, printed in the logs on spark-a," in watchdog.detail
    assert "https://github.com/vllm-project/vllm/issues/52504" in watchdog.detail
    assert "release on aarch64 (GB10, GB200) across nodes, in a build made with GCC before 10" in watchdog.detail
    assert "(architecture unknown: the logs do not say these nodes' architecture" in watchdog.detail
    # the root cause is no hang: the advisory names only the findings whose symptom it is
    assert "advisories" not in findings["nccl-collective-size-mismatch"].facts


def test_an_advisory_of_one_architecture_on_logs_of_unknown_architecture_says_so() -> None:
    """The trial's C16: the x86 H200 logs of four-hosts-rank-exception had the aarch64-only 2.28.9 advisory
    attached as though it applied; nothing in logs names the architecture, and the note now says so."""
    sources, _ = file_sources([str(ROOT / "tests" / "fixtures" / "nccl4" / "four-hosts-rank-exception")])
    noted = [f for f in diagnose_files(sources, catalogue([])).findings if "advisories" in f.facts]
    assert noted, "the fixture's NCCL 2.28.9 draws the advisory"
    for finding in noted:
        assert "architecture unknown: the logs do not say these nodes' architecture" in finding.detail


def test_a_version_outside_the_ranges_or_on_another_node_attaches_nothing() -> None:
    sources, _ = file_sources([str(MISMATCHED)])
    findings = diagnose_files(sources, catalogue([])).findings
    plain = [replace(f, facts={k: v for k, v in f.facts.items() if k != "advisories"}) for f in findings]
    assert all(
        "advisories" not in f.facts for f in attach(plain, {"nccl_version": {"spark-a": ["2.29.7"]}}, ADVISORIES)
    )
    assert all(
        "advisories" not in f.facts for f in attach(plain, {"nccl_version": {"elsewhere": ["2.28.9"]}}, ADVISORIES)
    )
    assert any("advisories" in f.facts for f in attach(plain, {"nccl_version": {"spark-a": ["2.28.9"]}}, ADVISORIES))


def test_the_kernel_command_line_is_read_in_the_same_round_trip() -> None:
    """The captured inventories predate it: their command line is not known, and the advisory that needs it
    is decided all the same where the kernel is another."""
    inv = captured("spark-a")
    assert inv.cmdline is None
    result = judge([inv], {"spark-a"}, None, rules.builtin())
    assert "kernel-7-0-0-1019-nvidia-kho-cma" not in {n.rule.id for n in result.not_checked}


def test_the_host_section_carries_the_kernel_command_line_after_uname() -> None:
    text = "Linux\n7.0.0-1019-nvidia\naarch64\nspark-a\nBOOT_IMAGE=/boot/vmlinuz-7.0.0-1019-nvidia ro kho=off\n"
    assert parse.host(text)[1:] == (
        "7.0.0-1019-nvidia",
        "aarch64",
        "spark-a",
        "BOOT_IMAGE=/boot/vmlinuz-7.0.0-1019-nvidia ro kho=off",
    )
    assert parse.host("Linux\n6.17.0-1032-nvidia\naarch64\nspark-a\n")[4] is None
