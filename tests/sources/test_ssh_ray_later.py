"""``ssh://node/ray`` followed sees the Ray logs made after it started (trial 2026-12b §4 item 9, over SSH: a
job's workers' files), each once, from its first line, through the real test sshd."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sparktui.core.sources.base import LiveSource
from sparktui.core.sources.open import _SshRay
from sparktui.core.sources.ssh import SshFileSource
from tests.servers.sshd import SshdCluster


async def test_logs_made_after_the_first_listing_are_found(cluster: SshdCluster, tmp_path: Path) -> None:
    logs = tmp_path / "session_latest" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_text("raylet first\n")
    group = _SshRay("ssh://node-a/ray", cluster.node("node-a"), str(logs))
    assert [s.name for s in await group.expand()] == ["node-a:ray/raylet.out"]
    worker = "worker-" + "0" * 40 + "-01000000-3001.out"
    (logs / worker).write_text("NCCL WARN from a job started later\n")
    (logs / "debug_state.txt").write_text("not a followed log\n")
    later: list[LiveSource] = []
    async with asyncio.timeout(30):
        async for source in group.later():
            later.append(source)
            break
    assert [s.name for s in later] == [f"node-a:ray/{worker}"]  # raylet.out not again, debug_state.txt never
    assert isinstance(later[0], SshFileSource) and later[0].path == f"{logs}/{worker}"
