"""``sparktui check`` on the two spark test nodes, over their real SSH connections and Docker engines, before
anything is launched: each planted problem is named with its remedy and a block verdict, the drift table
shows each planted difference, and a clean pair is ready.

Planted: on spark-b another build of the engine image under the same tag, whose ``python3`` is this
machine's Python 3.12 without Ray (so the image id, Python and Ray differ); an interface that only spark-a
has, named in both containers' NCCL_SOCKET_IFNAME; a 64 MiB /dev/shm on spark-b; a launch on Ray's GCS
port with a world size of two on nodes without GPUs and without Ray; a model whose architecture no engine
here knows (the images hold no vLLM: that check says it could not decide, and why)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.audit import read_log
from sparktui.core.cluster import Deployment
from sparktui.core.dirs import state_dir
from sparktui.tui.screens.inventory import InventoryScreen
from tests.servers import plant
from tests.servers.cockpit import spark_cockpit
from tests.servers.fabric import MAC_A, MAC_B, mounted, spark_ports
from tests.servers.sparks import IFACE, Sparks
from tests.tui.test_play_screen import SIZE, shown
from tests.waiting import until, wait_until

IMAGE = "sparktui-test/check:1"
ONLY_A = "enp2s0f0np0"
CHECK = ["check", "--image", IMAGE, "--container", "vllm_node", "spark-a", "spark-b"]


@pytest.fixture
def only_on_a(sparks: Sparks) -> Iterator[str]:
    """An interface spark-a has and spark-b lacks (a bridge: this kernel has no dummy links)."""
    sparks.head.run(f"ip link add {ONLY_A} type bridge && ip link set {ONLY_A} up")
    try:
        yield ONLY_A
    finally:
        sparks.head.run(f"ip link delete {ONLY_A}", check=False)


def ray_head(sparks: Sparks, *, workers: bool) -> None:
    a = sparks.head
    a.run(f"docker exec vllm_node ray start --head --port=6379 --node-ip-address={a.address} --disable-usage-stats")
    for node in sparks.workers if workers else ():
        node.run(f"docker exec vllm_node ray start --address={a.address}:6379 --node-ip-address={node.address}")
    want = 1 + (len(sparks.workers) if workers else 0)

    def joined() -> bool:
        return a.run("docker exec vllm_node ray status", check=False).stdout.count(" node_") == want

    wait_until(joined, 90, "the Ray cluster")


def checked(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main([*CHECK, "--json", *args])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.skipif(plant.OTHER_PYTHON is None, reason="needs a second Python (3.12) on this machine")
def test_each_planted_problem_is_named_with_its_remedy_and_blocks(
    sparks: Sparks, only_on_a: str, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = sparks.head, sparks["spark-b"]
    plant.engine_image(a, IMAGE)
    python = plant.other_python_image(b, IMAGE)
    for node in sparks:
        model = plant.model(node, "sparktest", ["SparkTestForCausalLM"], "sparktest")
    env = {"NCCL_SOCKET_IFNAME": only_on_a}
    plant.engine(a, IMAGE, env=env, shm_size="2g")
    plant.engine(b, IMAGE, python=python, env=env, shm_size="64m")
    ray_head(sparks, workers=False)
    launch = f"vllm serve {model} --tensor-parallel-size 2 --port 6379"

    code, found = checked(capsys, "--launch", launch)

    assert code == 1 and found["verdict"] == "block"
    assert {n: v["verdict"] for n, v in found["nodes"].items()} == {"spark-a": "block", "spark-b": "block"}  # type: ignore[attr-defined]
    named = {f["signature"]: f for f in found["findings"]}  # type: ignore[attr-defined]
    expected = {
        "launch-world-size-exceeds-node-gpus": (["spark-a", "spark-b"], "vllm-add-ray-backend"),
        "drift-ray-version": (["spark-a", "spark-b"], "copy-image-to-nodes"),
        "drift-python-version": (["spark-a", "spark-b"], "copy-image-to-nodes"),
        "drift-image-build": (["spark-a", "spark-b"], "copy-image-to-nodes"),
        "iface-nccl-socket-missing": (["spark-b"], "pin-nccl-interfaces"),
        "port-in-use": (["spark-a"], "free-port"),
        "shm-too-small": (["spark-b"], "docker-shm-ipc-host"),
    }
    for signature, (nodes, remedy) in expected.items():
        assert named[signature]["nodes"] == nodes, signature
        assert remedy in named[signature]["remediations"], signature
    assert named["shm-too-small"]["verdict"] == "slow"
    assert "spark-a: 2.60.0; spark-b: none" in named["drift-ray-version"]["detail"]
    assert "spark-b: 3.12" in named["drift-python-version"]["detail"]
    assert f"NCCL_SOCKET_IFNAME={only_on_a}" in named["iface-nccl-socket-missing"]["detail"]
    arch = [n for n in found["not_checked"] if n["check"] == "model-arch-unknown-to-vllm"]  # type: ignore[attr-defined]
    assert [n["lacking"] for n in arch] == [{"probe.vllm_archs": "vLLM is not installed in the image"}] * 2

    rows = {r["label"]: r for r in found["drift"]["rows"]}  # type: ignore[index]
    for label in ("image id", "ray", "python", "interfaces", "/dev/shm"):
        assert rows[label]["differs"], label
    assert rows["ray"]["values"] == [
        {"value": "2.60.0", "nodes": ["spark-a"]},
        {"value": "(none)", "nodes": ["spark-b"]},
    ]
    assert not rows["NCCL_SOCKET_IFNAME"]["differs"] and not rows["os"]["differs"]

    ran = [(e.node, e.step, e.exit_code) for e in read_log(state_dir() / "audit.jsonl")]
    assert sorted(ran) == [("spark-a", "inventory", 0), ("spark-b", "inventory", 0)]


def test_the_text_says_the_verdicts_remedies_and_drift(sparks: Sparks, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = sparks.head, sparks["spark-b"]
    plant.engine_image(a, IMAGE)
    plant.engine_image(b, IMAGE)  # imported again: another image id under the same tag
    for node in sparks:
        plant.engine(node, IMAGE)
    assert main([*CHECK, "--launch", "vllm serve org/model --tensor-parallel-size 2"]) == 1
    text = capsys.readouterr().out
    assert "verdict: BLOCK   spark-a: block   spark-b: block" in text
    assert "BLOCK  The launch needs more GPUs than one node has" in text
    assert "remedy: sparktui play vllm-add-ray-backend" in text
    assert "drift across spark-a, spark-b: " in text and "image id" in text
    assert "sparktui check: the nodes named, in " in text


def test_a_clean_pair_is_ready(sparks: Sparks, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With an RDMA fabric of real samples' values bound over each node's /sys/class/infiniband (see
    tests/servers/fabric.py): the cabled cage's ports active, their IPv4 RoCE v2 GIDs on the nodes' subnet."""
    a, b = sparks.head, sparks["spark-b"]
    plant.engine_image(a, IMAGE)
    plant.copy_image(a, b, IMAGE)
    for node in sparks:
        model = plant.model(node, "tiny", ["Qwen2ForCausalLM"], "qwen2")
        plant.engine(node, IMAGE, env={"NCCL_SOCKET_IFNAME": IFACE, "GLOO_SOCKET_IFNAME": IFACE}, shm_size="2g")
    ray_head(sparks, workers=True)
    launch = f"vllm serve {model} --tensor-parallel-size 2 --distributed-executor-backend ray --port 18080"

    trees = {"spark-a": spark_ports(a.address, MAC_A), "spark-b": spark_ports(b.address, MAC_B)}
    with mounted(sparks, tmp_path / "fabric", trees):
        code, found = checked(capsys, "--launch", f"NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 {launch}")

    assert (code, found["verdict"], found["findings"]) == (0, "ready", [])
    assert {n: v["verdict"] for n, v in found["nodes"].items()} == {"spark-a": "ready", "spark-b": "ready"}  # type: ignore[attr-defined]
    assert [r["label"] for r in found["drift"]["rows"] if r["differs"]] == []  # type: ignore[index]
    facts = found["nodes"]["spark-a"]["facts"]  # type: ignore[index]
    assert (facts["ray.nodes"], facts["ray.gpus"], facts["probe.ray"]) == (2, 2.0, "2.60.0")


def test_a_node_that_does_not_answer_blocks_and_the_other_is_still_checked(
    sparks: Sparks, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", "--json", "spark-a", "root@127.0.0.1:1"])
    found = json.loads(capsys.readouterr().out)
    assert code == 1 and found["verdict"] == "block"
    # spark-a, without RDMA, is told NCCL will use sockets (advice)
    (unreachable,) = [f for f in found["findings"] if f["signature"] != "rdma-none"]
    assert unreachable["signature"] == "node-unreachable" and unreachable["nodes"] == ["root@127.0.0.1:1"]
    assert (
        found["nodes"]["spark-a"]["verdict"] == "ready"
        and found["nodes"]["spark-a"]["facts"]["node.hostname"] == "spark-a"
    )


async def test_in_the_cockpit_i_checks_the_cluster_and_x_reports_it(sparks: Sparks, tmp_path: Path) -> None:
    a, b = sparks.head, sparks["spark-b"]
    plant.engine_image(a, IMAGE)
    plant.engine_image(b, IMAGE)  # another build under the same tag
    for node in sparks:
        plant.engine(node, IMAGE, shm_size="2g")
    app = spark_cockpit(sparks, tmp_path, deployment=Deployment(image=IMAGE, containers=("vllm_node",)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("I")
        await until(lambda: isinstance(app.screen, InventoryScreen), 20, "the inventory's screen")
        screen = app.screen
        await until(lambda: "verdict: " in shown(screen), 60, "the verdict")
        text = shown(screen)
        assert "verdict: BLOCK" in text and "spark-a: block" in text
        assert "The nodes hold different builds of the engine image" in text and "copy-image-to-nodes" in text
        assert "image id" in text and "drift across spark-a, spark-b" in text
        assert "spark-a  no RDMA devices: NCCL will use sockets" in text  # the fabric table, no tree mounted
        await pilot.press("escape")
        table = app.findings_table
        await until(lambda: any(f.signature == "drift-image-build" for f in table.findings), 20, "the image drift")
        row = next(i for i, f in enumerate(table.findings) if f.signature == "drift-image-build")
        assert table.get_cell("drift-image-build", "severity").plain == "check: block"  # the verdict among them
        table.move_cursor(row=row)
        await pilot.press("enter")
        await until(lambda: "copy-image-to-nodes" in shown(app.screen), 20, "the copy playbook")
        assert "no log line" in shown(app.screen)
        await pilot.press("escape")
        await pilot.press("x")
        await until(lambda: any(tmp_path.glob("sparktui-report-*/report.md")), 30, "the report")
    (report,) = tmp_path.glob("sparktui-report-*/report.md")
    assert "Verdict: **block**" in report.read_text() and "| **image id** |" in report.read_text()
