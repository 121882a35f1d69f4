"""The pre-launch check's pure parts: reading launch commands, the conditions' three-valued logic, loading
check files, the drift table and the verdicts, judged on the inventories captured on the spark test nodes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import CatalogueError
from sparktui.core.inventory import rules
from sparktui.core.inventory.expr import UNKNOWN, ExprError, Scope, compile_expression, evaluate
from sparktui.core.inventory.names import known
from sparktui.core.inventory.preflight import judge
from sparktui.core.launch.serve import LaunchError, parse_launch
from sparktui.core.report.export import export
from sparktui.core.report.incident import Incident, Inventory

from ..conftest import ROOT
from .test_inventory import captured


def test_vllm_serve_with_its_parallel_sizes_executor_and_port() -> None:
    launch = parse_launch(
        "NCCL_SOCKET_IFNAME=enp1s0f1np1 vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 2 "
        "--max-model-len 2048 --gpu-memory-utilization 0.8 --enforce-eager --distributed-executor-backend=ray"
    )
    assert (launch.engine, launch.model, launch.world_size, launch.executor) == (
        "vllm",
        "meta-llama/Llama-3.3-70B-Instruct",
        2,
        "ray",
    )
    assert launch.port == 8000 and launch.env == (("NCCL_SOCKET_IFNAME", "enp1s0f1np1"),)
    assert "--enforce-eager" in launch.flags and launch.nnodes is None


def test_the_playbooks_docker_exec_bash_c_form() -> None:
    launch = parse_launch(
        "docker exec -it -e HF_TOKEN=x $VLLM_CONTAINER /bin/bash -c 'vllm serve /models/m -tp 2 -pp 2 --port 8001'"
    )
    assert (launch.container, launch.model, launch.world_size, launch.port) == ("$VLLM_CONTAINER", "/models/m", 4, 8001)
    assert launch.env == (("HF_TOKEN", "x"),)


def test_native_multi_node_and_the_module_forms() -> None:
    native = parse_launch("python3 -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2 --nnodes 2")
    assert (native.gpus_per_node, native.nnodes) == (1, 2)
    sglang = parse_launch("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --nnodes 2 --node-rank 1")
    assert (sglang.engine, sglang.port, sglang.node_rank, sglang.world_size) == ("sglang", 30000, 1, 2)


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("ray start --head", "not a vLLM or SGLang launch"),
        ("vllm serve --tensor-parallel-size 2", "no model"),
        ("vllm serve m --tensor-parallel-size two", "not a whole number"),
        ("vllm serve 'm", "cannot split"),
    ],
)
def test_what_is_not_a_launch_is_said_in_one_line(command: str, says: str) -> None:
    with pytest.raises(LaunchError, match=says):
        parse_launch(command)


def test_with_the_images_parser_a_new_switch_takes_no_value() -> None:
    with pytest.raises(LaunchError, match="no model"):  # taken as the flag's value
        parse_launch("vllm serve --fancy-new-switch m")
    launch = parse_launch("vllm serve --fancy-new-switch m --port 9000", switches={"--fancy-new-switch"})
    assert (launch.model, launch.port) == ("m", 9000)


def expr(text: str) -> object:
    return compile_expression(text, known)


def value(text: str, **facts: object) -> object:
    named = {k.replace("__", "."): v for k, v in facts.items()}
    return evaluate(compile_expression(text, known), Scope(named))[0]  # type: ignore[arg-type]


def test_an_unknown_fact_makes_unknown_unless_the_other_side_decides() -> None:
    assert value("gpu.count > 1") is UNKNOWN
    assert value("gpu.count > 1 and launch.tp > 1", launch__tp=1) is False
    assert value("gpu.count > 1 or launch.tp > 1", launch__tp=2) is True
    assert value("not gpu.count") is UNKNOWN
    assert value("default(env.NCCL_IB_DISABLE, '0') == '1'") is False
    assert value("known(gpu.count)") is False and value("known(gpu.count)", gpu__count=0) is True


def test_the_facts_that_were_missing_are_named() -> None:
    facts = Scope({"launch.tp": 2})
    _, lacking = evaluate(compile_expression("launch.tp > 1 and gpu.count < launch.tp", known), facts)
    assert lacking == {"gpu.count"}
    _, lacking = evaluate(compile_expression("launch.tp > 3 and gpu.count < launch.tp", known), facts)
    assert lacking == set()  # decided by launch.tp alone


def test_versions_interfaces_and_missing_items() -> None:
    assert value("version(probe.vllm) >= version('0.13')", probe__vllm="0.32.0+cpu") is True
    assert value("version(probe.vllm) < version('0.13')", probe__vllm="") is UNKNOWN
    assert value("unmatched_ifnames('eth,ib', net.interfaces)", net__interfaces=("lo", "eth0")) == ("ib",)
    assert value(
        "missing(model.architectures, probe.vllm_archs)", model__architectures=("A", "B"), probe__vllm_archs=("B",)
    ) == ("A",)


def test_values_of_the_wrong_kind_are_unknown_not_a_crash() -> None:
    assert value("gpu.count > 'two'", gpu__count=1) is UNKNOWN


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('true')",
        "gpu.count.__class__",
        "(lambda: 1)()",
        "gpu",
        "gpu.count if 1 else 2",
        "x.y[0]",
    ],
)
def test_a_condition_says_only_what_a_condition_may(text: str) -> None:
    with pytest.raises(ExprError):
        expr(text)


def test_a_misspelt_fact_is_refused_when_the_file_loads(tmp_path: Path) -> None:
    body = (ROOT / "diagnostics/checks/port-in-use.toml").read_text().replace("ports.listening", "ports.listen")
    path = tmp_path / "port-in-use.toml"
    path.write_text(body)
    with pytest.raises(CatalogueError, match=re.escape("port-in-use.toml: when: unknown fact 'ports.listen'")):
        rules.load_rule(path)


def test_an_example_the_check_gets_wrong_is_named(tmp_path: Path) -> None:
    body = (
        (ROOT / "diagnostics/checks/port-in-use.toml")
        .read_text()
        .replace('"ports.listening" = [22, 8000]', '"ports.listening" = [22]')
    )
    path = tmp_path / "port-in-use.toml"
    path.write_text(body)
    assert rules.check_examples(rules.load_rule(path)) == [f"{path}: examples[0]: did not fire, but must fire"]


CLEAN_LAUNCH = "vllm serve /models/sparktest --tensor-parallel-size 2 --port 6379"


def test_the_spark_captures_judged_with_a_launch_across_them() -> None:
    """spark-a runs its engine container with a Ray head (its GCS on 6379) and a 512 MiB /dev/shm; spark-b
    holds another build under the image's tag and no container; the launch asks two GPUs of nodes with none,
    without Ray, on the GCS's port."""
    found = judge([captured("spark-a"), captured("spark-b")], {"spark-a"}, parse_launch(CLEAN_LAUNCH), rules.builtin())
    named = {f.signature: f for f in found.findings}
    assert named["launch-world-size-exceeds-node-gpus"].nodes == ("spark-a", "spark-b")
    assert named["port-in-use"].nodes == ("spark-a",)
    assert named["shm-too-small"].nodes == ("spark-a",) and named["shm-too-small"].verdict == "slow"
    assert "drift-image-build" in named
    assert found.verdicts == {"spark-a": "block", "spark-b": "block"} and found.verdict == "block"
    assert [f.verdict for f in found.findings] == sorted(
        (f.verdict for f in found.findings), key=["block", "slow", "advice"].index
    )
    not_checked = {(n.rule.id, n.node) for n in found.not_checked}
    assert ("model-arch-unknown-to-vllm", "spark-a") in not_checked
    (arch,) = [n for n in found.not_checked if n.rule.id == "model-arch-unknown-to-vllm" and n.node == "spark-a"]
    assert dict(arch.lacking) == {"probe.vllm_archs": "vLLM is not installed in the image"}


def test_the_drift_table_puts_each_difference_side_by_side() -> None:
    found = judge([captured("spark-a"), captured("spark-b")], {"spark-a"}, None, rules.builtin())
    rows = {r.label: r for r in found.drift.rows}
    assert rows["image id"].differs and {n for _, nodes in rows["image id"].groups for n in nodes} == {
        "spark-a",
        "spark-b",
    }
    assert not rows["os"].differs and rows["os"].groups == (("Debian GNU/Linux 12 (bookworm)", ("spark-a", "spark-b")),)
    assert rows["NCCL_SOCKET_IFNAME"].groups == (("enp2s0f0np0", ("spark-a",)), ("(unset)", ("spark-b",)))
    assert rows["python"].groups == (("3.11.7", ("spark-a",)), ("(unknown)", ("spark-b",)))


def test_without_a_launch_only_the_checks_of_the_nodes_run() -> None:
    found = judge([captured("spark-a")], {"spark-a"}, None, rules.builtin())
    assert {f.signature for f in found.findings} == {"shm-too-small"} and found.verdict == "slow"
    assert all(not n.rule.needs_launch for n in found.not_checked)


def test_the_report_carries_the_verdicts_and_the_drift_table_with_hosts_replaced(tmp_path: Path) -> None:
    found = judge([captured("spark-a"), captured("spark-b")], {"spark-a"}, parse_launch(CLEAN_LAUNCH), rules.builtin())
    inventory = Inventory(found.verdict, tuple(found.verdicts.items()), found.drift)
    incident = Incident(Diagnosis((), found.findings, {}), title="sparktui check", inventory=inventory)
    written = {p.name: p for p in export(incident, tmp_path, anonymise_hosts=True, hosts=["spark-a", "spark-b"])}
    md = written["report.md"].read_text()
    assert "Verdict: **block**" in md and "| **image id** |" in md and "| **python** | `3.11.7` |" in md
    assert "spark-a" not in md and "spark-b" not in md  # node names replaced there too
    report = json.loads(written["report.json"].read_text())
    assert report["inventory"]["verdict"] == "block" and len(report["inventory"]["nodes"]) == 2
    assert 'class="differs"' in written["report.html"].read_text()
