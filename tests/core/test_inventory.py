"""The node inventory, from the real output of its script (captured on this machine and on the spark test
nodes by tools/capture/commands/, nvidia-smi on an H200), parsed by pure functions; the script itself run
here; the in-image probe run with this machine's Pythons, as docker exec feeds it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from sparktui.core.inventory import collect, image_probe, parse, script
from sparktui.core.inventory.facts import Gpu, NodeInventory
from sparktui.core.inventory.image import probe_facts

from ..conftest import ROOT

COMMANDS = ROOT / "tests" / "fixtures" / "commands"


def captured(name: str) -> NodeInventory:
    """The inventory in ``inventory-NAME.txt``, split with the nonce its meta file names."""
    meta = tomllib.loads((COMMANDS / f"inventory-{name}.meta.toml").read_text())
    lines = (COMMANDS / f"inventory-{name}.txt").read_text().splitlines()
    request = script.Request(image=meta["image"], containers=tuple(meta["containers"]), model=meta["model"])
    return collect.inventory(name, script.split(lines, meta["nonce"]), request)


def test_this_machine_without_gpu_docker_daemon_or_ray_cluster_says_why_for_each() -> None:
    inv = captured("local")
    assert (inv.hostname, inv.os, inv.arch) == ("vm", "Debian GNU/Linux 12 (bookworm)", "x86_64")
    assert inv.gpus is None and inv.unknown["gpus"] == "nvidia-smi: not installed"
    eth0 = next(i for i in inv.interfaces if i.name == "eth0")
    assert (eth0.state, eth0.mtu, eth0.addresses[0]) == ("UP", 1400, "192.0.2.2/24")
    assert inv.rdma == () and "rdma" not in inv.unknown  # the RDMA tool found no RDMA subsystem: no devices
    assert inv.shm is not None and inv.shm.mount == "/dev/shm" and inv.shm.size > 1 << 30
    assert inv.unknown["docker_version"].startswith("Cannot connect to the Docker daemon")
    assert inv.ray is not None and not inv.ray.running
    assert inv.ray.problem.startswith("ConnectionError: Could not find any running Ray instance")
    assert inv.model is not None and not inv.model.present and inv.model.problem == "no config.json"
    assert inv.disk is not None and inv.disk.free > 0
    assert inv.probe is not None and inv.probe.problem.startswith("nothing to probe")


def test_a_spark_node_with_its_engine_container_running_ray_is_read_inside_the_container() -> None:
    inv = captured("spark-a")
    assert inv.docker == "20.10.24+dfsg1"
    assert [c.name for c in inv.containers] == ["vllm_node"]
    c = inv.container
    assert c is not None and c.running and c.image == "sparktui-test/check:1" and c.network == "host"
    assert c.shm_bytes == 512 << 20 and ("/root/models", "/models") in c.mounts
    assert c.env["NCCL_SOCKET_IFNAME"] == "enp2s0f0np0"
    assert inv.image is not None and inv.image.id == c.image_id and inv.image.digests == ()
    assert inv.ray is not None and (inv.ray.running, inv.ray.nodes, inv.ray.gpus) == (True, 1, 1.0)
    assert inv.ray.failures == () and inv.ray.demands == ()
    assert {22, 6379} <= inv.ports  # sshd, and the Ray head's GCS
    probe = inv.probe
    assert probe is not None and probe.via == "container vllm_node" and probe.problem == ""
    assert (probe.python, probe.version("ray"), probe.version("vllm")) == ("3.11.7", "2.60.0", None)
    assert probe.programs["vllm"] == "/bin/vllm" and probe.env["GLOO_SOCKET_IFNAME"] == "enp2s0f0np0"
    assert probe.interfaces is not None and "enp2s0f0np0" in probe.interfaces
    assert probe.model is not None and probe.model.architectures == ("SparkTestForCausalLM",)
    assert probe.model.model_type == "sparktest" and "model.safetensors" in probe.model.files
    assert probe.vllm_archs is None and probe.model_types is None  # neither vLLM nor transformers there


def test_a_node_whose_image_has_no_python_gets_the_image_read_and_the_probe_failure() -> None:
    inv = captured("spark-b")
    assert inv.container is None and inv.unknown["container"] == "no engine container running"
    assert inv.image is not None and inv.image.ref == "sparktui-test/check:1"
    assert inv.image.id != captured("spark-a").image.id  # type: ignore[union-attr]
    assert inv.probe is not None and inv.probe.via == "image sparktui-test/check:1"
    assert inv.probe.problem == "python3: not found"


def test_nvidia_smi_on_an_h200() -> None:
    (gpu,) = parse.gpus((COMMANDS / "nvidia-smi-query-h200.txt").read_text())
    assert gpu == Gpu(0, "NVIDIA H200", 143771, "580.159.04", "9.0", "00000000:00:06.0")
    assert parse.cuda((COMMANDS / "nvidia-smi-version-h200.txt").read_text()) == "13.0"
    assert parse.cuda((COMMANDS / "nvidia-smi-table-h200.txt").read_text()) == "13.0"


def test_the_gpu_query_is_the_one_the_capture_ran() -> None:
    fields = next(
        line.split("=", 1)[1]
        for line in (ROOT / "tools/capture/commands/nvidia-smi.sh").read_text().splitlines()
        if line.startswith("Q=")
    )
    assert f"--query-gpu={fields}" in script.script(script.Request(), "n")


@pytest.mark.parametrize("version", ["2.40.0", "2.60.0"])
def test_ray_status_in_both_formats(version: str) -> None:
    one = parse.ray_status((COMMANDS / f"ray-status-{version}-head-only.txt").read_text())
    two = parse.ray_status((COMMANDS / f"ray-status-{version}-two-nodes.txt").read_text())
    assert (one.running, one.nodes, one.gpus, one.demands) == (True, 1, 1.0, ())
    assert (two.nodes, two.gpus, two.gpus_used, two.failures) == (2, 2.0, 0.0, ())


def test_ray_status_pending_placement_groups() -> None:
    logs = ROOT / "tests" / "fixtures" / "ray"
    status = parse.ray_status((logs / "gpu-placement-group-pending" / "status.log").read_text())
    assert status.gpus == 1.0 and status.demands == ("{'GPU': 1.0} * 2 (PACK): 1+ pending placement groups",)


def test_rdma_devices_from_each_tool() -> None:
    # ibdev2netdev's line as NVIDIA's Spark playbook quotes it (no RDMA hardware here to capture one)
    (dev,) = parse.rdma("# ibdev2netdev\nrocep1s0f1 port 1 ==> enp1s0f1np1 (Up)")
    assert (dev.device, dev.port, dev.netdev, dev.state) == ("rocep1s0f1", "1", "enp1s0f1np1", "Up")
    assert parse.rdma("# rdma link\nFailed to open NETLINK_RDMA socket") == ()


def run_script(request: script.Request) -> NodeInventory:
    """The inventory script run here, as the local runner runs it (sh -c, output merged)."""
    run = script.nonce()
    done = subprocess.run(["sh", "-c", script.script(request, run)], capture_output=True, text=True, timeout=120)
    return collect.inventory("local", script.split((done.stdout + done.stderr).splitlines(), run), request)


@pytest.mark.slow  # the whole inventory script on this machine
def test_values_given_to_the_script_are_data_never_shell(tmp_path: Path) -> None:
    planted = tmp_path / "it's $(touch pwned) `touch pwned2`; rm -rf x"
    planted.mkdir()
    (planted / "config.json").write_text(json.dumps({"architectures": ["X"], "model_type": "x"}))
    inv = run_script(script.Request(model=str(planted), containers=("$(touch pwned3)",), probe=False))
    assert inv.model is not None and inv.model.path == str(planted) and inv.model.architectures == ("X",)
    assert not list(Path.cwd().glob("pwned*")) and not list(tmp_path.glob("pwned*"))


def test_a_section_marker_printed_by_a_command_opens_nothing(tmp_path: Path) -> None:
    """Only the run's own nonce frames a section: a config.json (or anything) that prints a marker with
    another nonce is just text."""
    lines = ["@@abc begin host", "@@n begin os", "@@abc end os 0", "NAME=x", "@@n end os 0"]
    found = script.split(lines, "n")
    assert list(found.sections) == ["os"] and found.sections["os"].text == "@@abc end os 0\nNAME=x"
    assert found.stray == ("@@abc begin host",)


def test_a_cut_off_script_keeps_what_it_printed() -> None:
    found = script.split(["@@n begin host", "Linux", "@@n end host 0", "@@n begin os", "NAME=x"], "n")
    assert found.sections["os"].code is None and found.sections["host"].code == 0


def test_without_the_probe_the_script_carries_it_for_the_hosts_builds_only() -> None:
    source = script.probe_source()
    assert source.splitlines()[0] in script.script(script.Request(), "n")
    without = script.script(script.Request(probe=False), "n")
    assert source.splitlines()[0] in without and "probe_on=0" in without


def run_probe(python: str, budget: float = 30, model: str = "") -> dict[str, object]:
    """The probe fed on stdin to ``python - BUDGET MODEL``, as docker exec -i feeds it."""
    done = subprocess.run(
        [python, "-", str(budget), model], input=script.probe_source(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert isinstance(found, dict)
    return found


def test_the_probe_with_this_python_reports_what_is_installed_and_nulls_for_the_rest(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["Qwen2ForCausalLM"],
                "model_type": "qwen2",
                "quantization_config": {"quant_method": "fp8"},
            }
        )
    )
    found = run_probe(sys.executable, model=str(tmp_path))
    facts = probe_facts("via container test\n" + json.dumps(found, indent=1))
    assert facts.python == ".".join(map(str, sys.version_info[:3])) and facts.problem == ""
    assert facts.version("vllm") is None and facts.vllm_archs is None and facts.vllm_flags is None
    assert facts.model is not None and facts.model.quantization == "fp8"
    assert facts.model.architectures == ("Qwen2ForCausalLM",) and facts.timed_out == ()


def oldest_python() -> str | None:
    """The oldest Python 3.8+ on this machine besides the one running (pyenv's, or on PATH)."""
    found = sorted(Path(sys.base_prefix).parent.glob("3.[89].*/bin/python3")) + sorted(
        Path(sys.base_prefix).parent.glob("3.1[0-9].*/bin/python3")
    )
    return str(found[0]) if found else shutil.which("python3.8")


def test_the_probe_runs_on_python_3_8() -> None:
    python = oldest_python()
    if python is None:
        pytest.skip("no older Python here")
    found = run_probe(python)
    assert str(found["python"]["version"]).startswith("3.")  # type: ignore[index]
    assert found["timed_out"] == [] and "error" not in found


def test_a_part_that_outlives_the_deadline_is_named_and_the_rest_kept() -> None:
    parts = image_probe.Parts(time.monotonic() + 0.3)
    threads = [parts.run([("fast", lambda: {"ok": True})]), parts.run([("slow", lambda: time.sleep(5) or {})])]
    parts.wait(threads)
    assert parts.results["fast"] == {"ok": True} and parts.timed_out() == ["slow"]


def test_a_part_that_fails_says_how_without_stopping_the_others() -> None:
    parts = image_probe.Parts(time.monotonic() + 5)
    parts.wait([parts.run([("broken", lambda: 1 / 0), ("after", lambda: {"ran": True})])])
    assert parts.timing["broken"]["status"].startswith("error: ZeroDivisionError")
    assert parts.results["after"] == {"ran": True}


@pytest.mark.parametrize("name", ["local", "spark-a", "spark-b"])
def test_every_section_is_printed_once_in_order_the_slow_ones_last(name: str) -> None:
    meta = tomllib.loads((COMMANDS / f"inventory-{name}.meta.toml").read_text())
    found = script.split((COMMANDS / f"inventory-{name}.txt").read_text().splitlines(), meta["nonce"])
    # the captures are older than the fabric section (issue 28) and the builds and logind ones (issue 41),
    # which a run of today's script prints
    later = ("fabric", "builds", "logind")
    expected = tuple(s for s in script.SECTIONS if s not in later or s in found.sections)
    assert tuple(found.sections) == expected and found.stray == ()
    assert all(s.code is not None for s in found.sections.values())
