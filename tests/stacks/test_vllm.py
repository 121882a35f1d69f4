"""``sparktui stacks`` on a real ``vllm serve`` (vLLM's CPU build, a tiny model, idle between requests): its
engine core is found by its title and dumped, in a group of its own, and nothing is named as elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.servers.fixtures import vllm_server
from tests.servers.vllm import VllmServer

from .test_live import PY_SPY

__all__ = ["vllm_server"]


def test_an_idle_vllm_server(
    vllm_server: VllmServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code = main(["stacks", "--json", "--samples", "2", "--interval", "0.5", "--py-spy", str(PY_SPY)])
    result = json.loads(capsys.readouterr().out)
    # this machine may run other engines too (the spark test nodes' containers share its process table)
    (core,) = (g for g in result["groups"] if g["job"] == "vllm-engine-core")
    (rank,) = (r for r in core["ranks"] if r["pid"] in vllm_server.engine_pids)
    assert rank["command"].startswith("VLLM::EngineCore"), rank
    assert rank["threads"] and rank["wait"] is not None, rank
    assert not rank["odd"] and core["verdict"] != "hang", core
    assert code != 1, result
