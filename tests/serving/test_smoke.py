"""The smoke test against a real vLLM server on the CPU: tokens per second from a real completion, and a
block verdict with its one-line reason for each way it fails (nothing listening, no such model, not the API,
an engine that generates nothing); from `sparktui check --serving`, and as a playbook's verification, from
this machine and through a node's SSH connection."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.remedy.render import Check
from sparktui.core.remedy.verify import run_check
from sparktui.core.remote.runner import LocalRunner, SshRunner
from sparktui.core.serving.smoke import smoke
from tests.servers.sshd import SshdCluster
from tests.servers.vllm import MODEL, VllmServer, free_port


async def test_a_completion_reports_tokens_per_second(vllm_server: VllmServer) -> None:
    found = await smoke(vllm_server.url)
    assert found.verdict == "ready", found
    assert found.model == MODEL and found.tokens == 32
    assert found.tokens_per_s is not None and found.tokens_per_s > 5
    assert found.first_token is not None and 0 < found.first_token < found.seconds
    assert found.reason.startswith("32 tokens in ") and "tokens/s" in found.reason


async def test_slower_than_asked_is_slow(vllm_server: VllmServer) -> None:
    found = await smoke(f"{vllm_server.url}/v1", max_tokens=8, slow_below=1e9)
    assert found.verdict == "slow" and found.reason.endswith("below 1e+09 tokens/s"), found


async def test_each_failure_blocks_with_its_reason(vllm_server: VllmServer) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    assert (await smoke(nobody)).summary == f"block: 127.0.0.1:{nobody.rsplit(':', 1)[1]}: connection refused"
    missing = await smoke(vllm_server.url, model="no-such-model")
    assert missing.verdict == "block"
    assert missing.reason.startswith(f"POST {vllm_server.url}/v1/completions: no such model: ")
    assert "no-such-model" in missing.reason
    elsewhere = await smoke(f"{vllm_server.url}/nothing")  # a real server, but not the API's root
    assert elsewhere.summary == (
        f"block: GET {vllm_server.url}/nothing/v1/models: 404: not an OpenAI-compatible server (or not its address)"
    )
    metrics = await smoke(f"{vllm_server.url}/metrics")  # vLLM's /metrics answers below it too, in its own text
    assert metrics.summary.startswith(f"block: GET {vllm_server.url}/metrics/v1/models: HTTP 200, not JSON: # HELP ")


async def test_an_engine_that_generates_nothing_blocks_at_the_time_limit(vllm_server: VllmServer) -> None:
    vllm_server.pause()
    try:
        found = await smoke(vllm_server.url, timeout=3)
    finally:
        vllm_server.resume()
    assert found.summary == f"block: POST {vllm_server.url}/v1/completions: no token within 3 s"


async def test_a_server_that_never_answers_blocks_within_the_time_asked() -> None:
    """A port that accepts and says nothing (trial 2026-12c C17: `--timeout 5` waited 10 s for /v1/models)."""
    held: list[asyncio.StreamWriter] = []

    async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        found = await smoke(f"http://127.0.0.1:{port}", timeout=1)
    assert found.summary == f"block: GET http://127.0.0.1:{port}/v1/models: no whole answer within 1 s"


def test_check_serving_prints_the_verdict_and_exits_as_diagnose(
    vllm_server: VllmServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--serving", vllm_server.url]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"ready  {vllm_server.url} ({MODEL}): 32 tokens in ") and "tokens/s" in line
    nobody = f"http://127.0.0.1:{free_port()}"
    assert main(["check", "--json", "--serving", vllm_server.url, "--serving", nobody, "--max-tokens", "4"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "block"
    assert [(s["url"], s["verdict"], s["tokens"]) for s in doc["serving"]] == [
        (vllm_server.url, "ready", 4),
        (nobody, "block", 0),
    ]
    assert doc["serving"][0]["tokens_per_s"] > 0 and doc["serving"][1]["reason"].endswith("connection refused")


def test_check_serving_with_bad_figures_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--serving", "http://127.0.0.1:9", "--max-tokens", "0"]) == 2
    assert "--max-tokens must be at least 1" in capsys.readouterr().err
    assert main(["check", "--serving", "notaurl"]) == 2  # one line, not a traceback
    assert "--serving: notaurl/v1/models: only http:// URLs can be asked" in capsys.readouterr().err


async def test_a_playbooks_completion_check_passes_from_here_and_through_ssh(
    vllm_server: VllmServer, sshd_cluster: SshdCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    said: list[str] = []
    here = Check("completion", "local", f"http://localhost:{vllm_server.port}", within=60)
    verdict = await run_check(here, LocalRunner(), lambda _node, line: said.append(line))
    assert verdict.passed and verdict.note.startswith(f"completion from http://localhost:{vllm_server.port}: ready: ")
    assert here.describe().startswith(f"one short completion from http://localhost:{vllm_server.port}/v1/completions")
    # node-a's own localhost, reached through its SSH connection (the test nodes share this machine's loopback)
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    runner = SshRunner.to({"node-a": "node-a"})
    try:
        there = Check("completion", "node-a", f"http://localhost:{vllm_server.port}", within=60)
        verdict = await run_check(there, runner, lambda _node, line: said.append(line))
        assert verdict.passed, verdict
        refused_port = free_port()
        refused = Check("completion", "node-a", f"http://localhost:{refused_port}", within=1)
        verdict = await run_check(refused, runner, lambda _node, line: said.append(line), interval=0.2)
        assert not verdict.passed, verdict
        assert verdict.note.endswith(f"block: node-a: cannot reach localhost:{refused_port}: Connection refused")
    finally:
        await runner.close()
