"""``sparktui check`` probing an image that holds the real vLLM (its CPU build, tests/servers/vllm_image.py)
on the head spark test node: the probe runs in ``docker run --rm -i --entrypoint python3 IMAGE -`` as on a
node, reads vLLM's own model registry, transformers' model types and the ``vllm serve`` parser, and the
checks decide from them before anything is launched."""

from __future__ import annotations

import json

import pytest

from sparktui.cli import main
from tests.servers import plant
from tests.servers.sparks import Sparks


def check(capsys: pytest.CaptureFixture[str], image: str, launch: str) -> tuple[int, dict[str, object]]:
    code = main(["check", "--json", "--image", image, "--launch", launch, "spark-a"])
    return code, json.loads(capsys.readouterr().out)


def test_a_model_whose_architecture_the_images_vllm_lacks_blocks(
    sparks: Sparks, vllm_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plant.model(sparks.head, "sparktest", ["SparkTestForCausalLM"], "sparktest")

    code, found = check(capsys, vllm_image, f"vllm serve {plant.MODELS}/sparktest --host 0.0.0.0 --port 18080")

    assert code == 1 and found["verdict"] == "block"
    named = {f["signature"]: f for f in found["findings"]}  # type: ignore[attr-defined]
    assert sorted(named) == ["model-arch-unknown-to-vllm", "model-type-unknown-to-transformers"]
    arch = named["model-arch-unknown-to-vllm"]
    assert (arch["verdict"], arch["nodes"], arch["remediations"]) == ("block", ["spark-a"], ["upgrade-engine-image"])
    assert arch["detail"] == (
        "config.json names SparkTestForCausalLM; vLLM 0.32.0 in the image on spark-a has no such architecture"
        " in its model registry"
    )
    assert found["not_checked"] == []
    facts = found["nodes"]["spark-a"]["facts"]  # type: ignore[index]
    assert facts["probe.via"] == f"image {vllm_image}"
    assert (facts["probe.vllm"], facts["probe.python"], facts["probe.ray"]) == ("0.32.0", "3.11.7", "")
    assert facts["probe.torch"].endswith("+cpu") and facts["probe.transformers"]
    assert {"Qwen2ForCausalLM", "LlamaForCausalLM"} <= set(facts["probe.vllm_archs"])
    assert {"qwen2", "llama"} <= set(facts["probe.model_types"])


def test_a_model_it_knows_passes_and_a_flag_its_parser_lacks_blocks(
    sparks: Sparks, vllm_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plant.model(sparks.head, "tiny", ["Qwen2ForCausalLM"], "qwen2")
    launch = f"vllm serve {plant.MODELS}/tiny --port 18080 --max-model-len 512 --tensor-paralel-size 1"

    code, found = check(capsys, vllm_image, launch)

    assert code == 1 and found["verdict"] == "block"
    (flag,) = found["findings"]  # type: ignore[misc]
    assert flag["signature"] == "launch-flag-unknown-to-vllm"
    assert flag["detail"] == "vLLM 0.32.0 in the image on spark-a has no flag --tensor-paralel-size"
    flags = found["nodes"]["spark-a"]["facts"]["probe.vllm_flags"]  # type: ignore[index]
    assert {"--port", "--host", "--max-model-len", "--distributed-executor-backend", "--headless"} <= set(flags)

    code, found = check(capsys, vllm_image, launch.replace("paralel", "parallel"))
    assert (code, found["verdict"], found["findings"]) == (0, "ready", [])
