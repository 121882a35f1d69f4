"""Playbook rendering is pure and safe: values checked against their kind, always quoted, sudo refused."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.address import ssh_address
from sparktui.core.remedy import playbook as pb
from sparktui.core.remedy import render as rd
from sparktui.core.remedy.approvals import Approvals

from ..conftest import FIXTURES

BOOK = """
id = "{id}"
title = "Test"
key = "t"
risk = "restarts"
description = "A playbook made for this test."
{extra}
[params.container]
kind = "name"
from = ["fact:container", "ask"]

[params.message]
kind = "text"
from = ["fact:message"]

[params.iface]
kind = "iface"
from = ["fact:iface"]

[[steps]]
title = "echo in the container"
on = "finding"
in = "container"
run = "echo {message} > /tmp/out-{node}"

[[steps]]
title = "pin"
on = "all"
run = "{sudo}echo NCCL_SOCKET_IFNAME={iface}"
"""


def write(tmp_path: Path, *, sudo: str = "", extra: str = "") -> pb.Playbook:
    path = tmp_path / "test-book.toml"
    path.write_text(BOOK.replace("{id}", "test-book").replace("{extra}", extra).replace("{sudo}", sudo))
    return pb.load(path)


NODES = rd.HeadAndWorkers("spark-a", ("spark-b",))


def test_values_from_a_log_are_quoted_and_never_executed(tmp_path: Path) -> None:
    book = write(tmp_path)
    evil = "x'; touch " + str(tmp_path / "pwned") + "; echo '$(id)`id`"
    facts = {"container": "vllm_node", "message": evil, "iface": "enp1s0f1np1"}
    rendered = rd.render(book, rd.resolve(book, facts), NODES, ["spark-b"])
    inner = rendered.commands[0].command
    assert inner.startswith("docker exec vllm_node sh -c ")
    # what `sh -c` would receive is the step with the value quoted: run that part for real
    step = shlex.split(inner)[-1]
    subprocess.run(["sh", "-c", step.replace("/tmp/out-", str(tmp_path / "out-"))], check=True)
    assert not (tmp_path / "pwned").exists()
    assert (tmp_path / "out-spark-b").read_text().strip() == evil
    assert [c.node for c in rendered.commands] == ["spark-b", "spark-a", "spark-b"]


@pytest.mark.parametrize(
    ("name", "value"),
    [("iface", "eth0; reboot"), ("iface", "$(id)"), ("container", "../etc"), ("container", "-rm")],
)
def test_values_that_do_not_fit_their_kind_are_refused(tmp_path: Path, name: str, value: str) -> None:
    book = write(tmp_path)
    values = {"container": "c1", "message": "hi", "iface": "eth0", name: value}
    with pytest.raises(pb.PlaybookError, match=f"refused {name}="):
        rd.render(book, values, NODES)


def test_sudo_needs_a_declaration(tmp_path: Path) -> None:
    with pytest.raises(pb.PlaybookError, match="sudo"):
        write(tmp_path, sudo="sudo ")
    book = write(tmp_path, sudo="sudo ", extra="sudo = true")
    assert book.sudo


def test_undeclared_placeholders_are_rejected(tmp_path: Path) -> None:
    path = tmp_path / "test-book.toml"
    path.write_text(BOOK.replace("{id}", "test-book").replace("{extra}", "").replace("{sudo}", "{nope}"))
    with pytest.raises(pb.PlaybookError, match="nope"):
        pb.load(path)


def test_the_builtin_playbooks_load() -> None:
    books = pb.load_all()
    assert "free-port" in books
    assert len({b.key for b in books.values()}) == len(books)


def test_play_dry_run_prints_each_node_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "free-port", "--node", "spark-a", "--node", "spark-b", "--set", "port=8000", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.count('ss -Hltnp "sport = :"8000') == 2
    assert "port = 8000" in out and "since =" not in out  # the run's own mark in time is no value to read
    assert main(["play", "free-port", "--node", "spark-a", "--set", "port=8000; rm -rf /", "--dry-run"]) == 2
    assert "not a valid port" in capsys.readouterr().err


def test_argv_values_are_quoted_words_appended_as_they_are() -> None:
    book = pb.load_all()["vllm-recreate-with-ray-backend"]
    recreate = shlex.join(["docker", "run", "-d", "--name", "vllm_node", "-e", "X=$(touch /tmp/p)", "img", "vllm"])
    rendered = rd.render(
        book,
        {"container": "vllm_node", "port": "8000"},
        rd.HeadAndWorkers("spark-a", ("spark-b",)),
        per_node={"spark-a": {"recreate": recreate}},
    )
    relaunch = [c for c in rendered.commands if "--distributed-executor-backend" in c.command]
    assert [c.node for c in relaunch] == ["spark-a"]
    assert shlex.split(relaunch[0].command)[-3:] == ["vllm", "--distributed-executor-backend", "ray"]
    assert "'X=$(touch /tmp/p)'" in relaunch[0].command
    assert rd.probed_on(book, "recreate", rd.HeadAndWorkers("spark-a", ("spark-b",))) == ("spark-a",)


def test_a_launch_is_relaunched_as_its_words_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trial 2026-12c H4: `check` refused `launch = "vllm serve $(touch /tmp/nu5/PWNED) x"`, but the playbooks
    took it, and the `sh -c` of the relaunch step would have run the `$(...)`. A launch with a shell operator or
    a redirection is refused; one without is handed to `sh -c` as its words, each quoted, so backquotes and
    `$NAME` reach the engine as text."""
    pwned = tmp_path / "pwned"
    play = ["play", "vllm-add-ray-backend", "--node", "spark-a", "--set", "container=c3", "--dry-run"]
    assert main([*play, "--set", f"serve=vllm serve $(touch {pwned}) x"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "refused serve=" in line and "shell operator '(': give the launch alone" in line
    assert main([*play, "--set", "serve=vllm serve m > /tmp/log"]) == 2
    assert "redirection '>/tmp/log': give the launch alone" in capsys.readouterr().err

    book = pb.load_all()["vllm-add-ray-backend"]
    serve = f"VLLM_X='a b' vllm serve `touch {pwned}` $HOME --tp 2"
    rendered = rd.render(
        book,
        {"container": "c3", "port": "8000", "gpu_count": "2", "serve": serve},
        rd.HeadAndWorkers("spark-a", ()),
    )
    (start,) = [c.command for c in rendered.commands if "--distributed-executor-backend" in c.command]
    words = shlex.split(start)
    script = words[words.index("-c") + 1]  # what the container's sh -c runs
    launch, _, redirected = script.partition(' "$@" ')
    assert launch == f"VLLM_X='a b' vllm serve '`touch' '{pwned}`' '$HOME' --tp 2" and redirected.startswith(">")
    shown = subprocess.run(["sh", "-c", launch.replace("vllm serve", "printf '%s|'")], capture_output=True, text=True)
    assert shown.stdout == f"`touch|{pwned}`|$HOME|--tp|2|" and not pwned.exists()


@pytest.mark.parametrize("value", ["docker run x; rm -rf /", "a  b", "'unbalanced", "x $(y)"])
def test_argv_values_must_be_canonically_quoted(value: str) -> None:
    book = pb.load_all()["vllm-recreate-with-ray-backend"]
    with pytest.raises(pb.PlaybookError, match="not a valid argv"):
        rd.render(
            book,
            {"container": "c", "port": "8000"},
            rd.HeadAndWorkers("spark-a"),
            per_node={"spark-a": {"recreate": value}},
        )


#: Two nodes, as a cluster file names them (spark-b's role left to its default, the worker).
TWO_NODES = """
[[nodes]]
name = "spark-a"
ssh = "nvidia@192.168.100.10"
role = "head"

[[nodes]]
name = "spark-b"
ssh = "nvidia@192.168.100.11"
"""

SGLANG_CLUSTER = (
    TWO_NODES
    + """
[deployment]
engine = "sglang"
containers = ["sglang_node"]
launch = '''NCCL_CUMEM_ENABLE=0 python3 -m sglang.launch_server \\
  --model-path Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 --tp-size 2 \\
  --dist-init-addr 192.168.100.10:25000 --nnodes 2 --node-rank 0 \\
  --mem-fraction-static 0.8 --attention-backend flashinfer --host 0.0.0.0 --port 30000'''
"""
)


def test_switch_to_vllm_translates_the_cluster_files_sglang_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sparktui.toml").write_text(SGLANG_CLUSTER)
    monkeypatch.chdir(tmp_path)
    given = ["--set", "hf_home=/home/nvidia/.cache/huggingface", "--set", "iface=enp1s0f1np1"]
    code = main(["play", "switch-sglang-to-vllm", *given, "--set", "head_ip=192.168.100.10", "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    serve = next(line for line in out.splitlines() if "docker exec -d" in line)
    words = shlex.split(shlex.split(serve.split("$ ", 1)[1])[6])  # the `sh -c` script of the serve step
    assert words[:4] == ["NCCL_CUMEM_ENABLE=0", "vllm", "serve", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"]
    assert "--tensor-parallel-size" in words and "--nnodes" not in words and "--dist-init-addr" not in words
    assert "dropped --attention-backend flashinfer" in out and "dropped --nnodes 2" in out


def test_translate_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["translate", "python3", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "vllm serve m --tensor-parallel-size 2 --distributed-executor-backend ray\n"
    assert "no --port" in captured.err
    assert main(["translate", "vllm serve m"]) == 2
    assert "already a vLLM command" in capsys.readouterr().err


def test_an_unusable_node_address_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert ssh_address("nvidia@[fe80::1]:2222") == ("nvidia", "fe80::1", 2222)
    code = main(["play", "free-port", "--node", "spark-a:99999", "--set", "port=8000", "--yes"])
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("spark-a:99999: the port must be a number from 1 to 65535")
    # trial 2026-12c: `--node 'a;b'` was rendered as the head `a;b`
    for node, shown in (("a;b", "a;b"), ("x\u202e", "x\\u202e")):
        assert main(["play", "free-port", "--node", node, "--set", "port=8000", "--dry-run"]) == 2
        assert capsys.readouterr().err == f"sparktui: --node {shown}: not a node name or [user@]host[:port]\n"
    assert main(["play", "free-port", "--node", "root@10.0.0.1:2222", "--set", "port=8000", "--dry-run"]) == 0
    assert "runs on root@10.0.0.1:2222 (named with --node)" in capsys.readouterr().out


def test_an_unknown_parameter_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["play", "free-port", "--node", "spark-a", "--set", "prot=8000", "--dry-run"]) == 2
    assert "--set prot: free-port has no such parameter (its parameters: port)" in capsys.readouterr().err


def test_a_dry_run_shows_what_it_cannot_read_on_the_nodes_as_names(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listens on loopback's port 9: the probe cannot read the container, so the dry run shows the
    docker run with <options>, <image> and <command>; a real run stops there."""
    play = ["play", "docker-shm-ipc-host", "--node", "127.0.0.1:9", "--set", "container=vllm_node"]
    assert main([*play, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "cannot read the nodes: 127.0.0.1:9:" in out
    assert "$ <options> --ipc host --ulimit memlock=-1 --ulimit stack=67108864 <image> <command>" in out
    assert main([*play, "--yes"]) == 2
    assert "127.0.0.1:9:" in capsys.readouterr().err


WRONG_IFNAME = FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname"


def test_a_dry_run_names_every_missing_value_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One run shows the commands with <name> where each value is still needed and the --set for all of
    them; a real run refuses, naming them all, before asking anything."""
    monkeypatch.chdir(tmp_path)  # no cluster file: the nodes and values come from the finding and --set
    play = ["play", "pin-nccl-interfaces", "--from", str(WRONG_IFNAME)]
    assert main([*play, "--dry-run"]) == 0
    out = capsys.readouterr().out
    needed = ("container", "iface", "hca", "head_ip", "serve")
    assert f"shown with {', '.join(f'<{n}>' for n in needed)} where values are still needed" in out
    assert f"to run it, give {' '.join(f'--set {n}=VALUE' for n in needed)}" in out
    assert "runs on spark-a (the nodes of the finding it fixes)" in out
    assert "NCCL_SOCKET_IFNAME=<iface>" in out and "ray start --head --port=6379 --node-ip-address=<head_ip>" in out
    assert main([*play, "--set", "iface=enp1s0f1np1", "--set", "hca=", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "no value for container (" in err and "head_ip (" in err and "serve (" in err and "iface (" not in err
    assert "--set container=VALUE --set head_ip=VALUE --set serve=VALUE" in err


def test_read_only_mode_refuses_before_values_or_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for extra in ([], ["--dry-run"], ["--from", "no-such-logs/", "--set", "nosuch=1"]):
        assert main(["play", "ray-start-cluster", "--readonly", *extra]) == 2
        assert (
            capsys.readouterr().err.strip()
            == "sparktui: ray-start-cluster restarts services (risk restarts): refused in read-only mode"
        )
    assert main(["play", "free-port", "--readonly", "--dry-run"]) == 0  # a read-only playbook still shows


def test_a_dry_run_without_nodes_renders_for_the_cluster_else_this_machine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["play", "free-port", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "runs on this machine (no --node, no cluster file, no nodes from --from)" in out
    assert '       local $ ss -Hltnp "sport = :"<port>' in out and "to run it, give --set port=VALUE" in out
    (tmp_path / "sparktui.toml").write_text(TWO_NODES)
    assert main(["play", "free-port", "--set", "port=8000", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"runs on spark-a, spark-b (the nodes of {tmp_path / 'sparktui.toml'})" in out
    assert [line.split("$")[0].strip() for line in out.splitlines() if "ss -Hltnp" in line] == ["spark-a", "spark-b"]


def test_approvals_are_the_users_alone(tmp_path: Path) -> None:
    """What runs without asking is kept where only the user reads or changes it (the trial found 0644 in a
    0755 folder, while the state folder is 0700)."""
    folder = tmp_path / "config" / "sparktui"
    folder.mkdir(parents=True, mode=0o755)
    approvals = Approvals(folder / "approvals.json")
    book = pb.load_all()["free-port"]
    approvals.grant("spark-a=spark-a", book)
    assert approvals.granted("spark-a=spark-a", book)
    assert (folder.stat().st_mode & 0o777, approvals.path.stat().st_mode & 0o777) == (0o700, 0o600)
