"""The cluster file: a good one loads; a bad one names the file, the key and the reason in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import cluster as config

GOOD = """
[[nodes]]
name = "spark-a"
ssh = "nvidia@192.168.100.10"
role = "head"

[[nodes]]
name = "spark-b"
ssh = "spark-b"
sources = ["ssh://spark-b/journal/docker"]

[deployment]
engine = "vllm"
image = "nvcr.io/nvidia/vllm:26.05-py3"
containers = ["vllm_node"]
launch = "vllm serve /models/x --tensor-parallel-size 2"

[network]
iface = "enp1s0f1np1"
head_ip = "192.168.100.10"
hca = ""
"""


def test_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "sparktui.toml"
    path.write_text(GOOD)
    assert config.find(tmp_path) == path
    cluster = config.load(path)
    assert cluster.head.name == "spark-a" and [w.name for w in cluster.workers] == ["spark-b"]
    assert cluster.source_uris() == [
        "ssh://nvidia@192.168.100.10/docker/vllm_node",
        "ssh://spark-b/docker/vllm_node",
        "ssh://spark-b/journal/docker",
    ]
    values = cluster.values()
    assert (values["iface"], values["head_ip"], values["hca"]) == ("enp1s0f1np1", "192.168.100.10", "")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('role = "head"', 'role = "boss"'), "nodes[0].role: 'boss' is not head or worker"),
        (('role = "head"', 'role = "worker"'), "nodes.role: exactly one node must be the head"),
        (('ssh = "spark-b"', 'ssh = "spark-b; rm -rf /"'), "nodes[1].ssh:"),
        (('ssh = "spark-b"', 'ssh = "spark-b:99999"'), "nodes[1].ssh:"),
        (('engine = "vllm"', 'engine = "tgi"'), "deployment.engine: 'tgi' is not vllm or sglang"),
        (("image =", "imagee ="), "deployment.imagee: unknown key"),
        (('hca = ""', "hca = 1"), "network.hca: needs a string"),
        (('hca = ""', 'hcas = ""'), "network.hcas: unknown key (iface, head_ip, hca)"),
        (('iface = "enp1s0f1np1"', 'iface = "eth0; reboot"'), "network.iface: 'eth0; reboot' is not a valid iface"),
        (('head_ip = "192.168.100.10"', 'head_ip = "$(id)"'), "network.head_ip: '$(id)' is not a valid host"),
        (('head_ip = "192.168.100.10"', 'head_ip = "999.1.1.1"'), "network.head_ip: '999.1.1.1' is not a valid host"),
        (("image = ", "image = 'Bad Image' #"), "deployment.image: 'Bad Image' is not a valid image"),
    ],
)
def test_bad_files_name_the_key(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    path = tmp_path / "sparktui.toml"
    path.write_text(GOOD.replace(*change))
    with pytest.raises(config.ConfigError) as info:
        config.load(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_play_takes_the_nodes_from_the_cluster_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sparktui.toml").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    assert main(["play", "free-port", "--set", "port=8000", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "spark-a $ ss" in out and "spark-b $ ss" in out


def test_play_takes_the_network_from_the_cluster_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sparktui.toml").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    assert main(["play", "ray-start-cluster", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "ray start --head --port=6379 --node-ip-address=192.168.100.10" in out
    assert "-e NCCL_SOCKET_IFNAME=enp1s0f1np1" in out


IB_LAUNCH = "NCCL_IB_HCA=rocep1s0f0,rocep1s0f1 NCCL_IB_GID_INDEX=3 vllm serve /m --tensor-parallel-size 2"


def test_per_node_nccl_ib_is_not_undone_by_the_launchs_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trial's C15: the relaunch ran `sh -c 'NCCL_IB_HCA=rocep1s0f0,rocep1s0f1 NCCL_IB_GID_INDEX=3 vllm serve
    ...'`, so vLLM got the launch's values back over each node's. They are taken out of the relaunched command."""
    (tmp_path / "sparktui.toml").write_text(
        GOOD.replace('"vllm serve /models/x --tensor-parallel-size 2"', repr(IB_LAUNCH))
    )
    monkeypatch.chdir(tmp_path)
    assert main(["play", "set-nccl-ib-per-node", "--dry-run"]) == 0
    out = capsys.readouterr().out
    (relaunch,) = [line for line in out.splitlines() if "docker exec -d" in line]
    assert "sh -c 'vllm serve /m --tensor-parallel-size 2'" in relaunch, relaunch
    assert "rocep1s0f0" not in out and "NCCL_IB_GID_INDEX=3" not in out


@pytest.mark.parametrize(
    "launch",
    ["docker exec -e NCCL_IB_GID_INDEX=3 vllm_node vllm serve /m", "bash -c 'NCCL_IB_HCA=mlx5_0 vllm serve /m'"],
)
def test_a_launch_setting_nccl_ib_where_it_cannot_be_taken_out_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], launch: str
) -> None:
    (tmp_path / "sparktui.toml").write_text(
        GOOD.replace('"vllm serve /models/x --tensor-parallel-size 2"', repr(launch))
    )
    monkeypatch.chdir(tmp_path)
    assert main(["play", "set-nccl-ib-per-node", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "set-nccl-ib-per-node: serve: the launch sets NCCL_IB_" in err, err
