"""A real vLLM CPU server's /metrics read live through the pipeline: quiet while idle for longer than the stall
window, tokens per second while it generates, the stall named once its engine has been stopped (SIGSTOP)
for 30 s with a request running, and gone again once the engine goes on."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import State
from sparktui.core.pipeline import Pipeline, run
from sparktui.core.sources.metrics import MetricsSource
from sparktui.core.sources.open import Opener
from tests.servers.sshd import SshdCluster
from tests.servers.vllm import VllmServer
from tests.waiting import wait_until

STALL = "vllm-serving-stalled"


class Watching:
    """The pipeline's diagnoses, followed on a thread of their own."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.latest: Diagnosis | None = None
        self.seen: list[Diagnosis] = []
        self.state = ""
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        for update in self.pipeline.updates():
            if update.diagnosis is not None:
                self.latest = update.diagnosis
                self.seen.append(update.diagnosis)
            for change in update.changes:
                self.state = change.state.value
            if update.done:
                return

    def until(self, what: Callable[[Diagnosis], bool], within: float) -> Diagnosis:
        """The latest diagnosis once ``what`` holds of it (:func:`~tests.waiting.wait_until`)."""

        def held() -> Diagnosis | None:
            latest = self.latest
            return latest if latest is not None and what(latest) else None

        try:
            return wait_until(held, within, "the diagnosis")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the last diagnosis: {self.latest}") from None

    def stop(self) -> None:
        self.pipeline.stop()
        self._thread.join(30)


def running(metrics: str) -> float:
    """The requests the server says are running, from its /metrics text."""
    found = re.search(r"^vllm:num_requests_running\{[^}]*\} (\S+)$", metrics, re.MULTILINE)
    assert found is not None, metrics[:2000]
    return float(found.group(1))


def stalled(d: Diagnosis) -> bool:
    return any(f.signature == STALL for f in d.findings)


def test_the_stall_fires_on_a_stopped_engine_and_not_on_an_idle_one(
    vllm_server: VllmServer, catalogue: Catalogue
) -> None:
    source = MetricsSource(f"{vllm_server.url}/metrics", name="metrics", node="cpu-node", interval=1.0)
    watching = Watching(run(catalogue, [source]))
    try:
        first = watching.until(lambda d: bool(d.serving), 30)
        assert first.serving[0].endpoint == f"127.0.0.1:{vllm_server.port}"
        # idle for longer than the stall window: nothing running, nothing found
        start = time.monotonic()
        watching.until(lambda d: time.monotonic() - start > 32, 40)
        assert not any(stalled(d) for d in watching.seen)
        assert all(s.running == 0 for d in watching.seen for s in d.serving)
        # generating: tokens per second in the serving health
        since = len(watching.seen)
        for _ in range(3):
            vllm_server.complete("hello", 500)

        def rates() -> list[float]:
            return [s.tokens_per_s for d in watching.seen[since:] for s in d.serving if s.tokens_per_s]

        wait_until(lambda: rates() and max(rates()) > 10, 30, "tokens per second in the serving health")
        # a request running, its engine stopped: named once 30 s of readings stood still
        # The server publishes its count of running requests every so often, not at each token: stop the engine
        # once it says the request runs (stopped before that, the server says nothing runs, which is no stall);
        # a request that ended first is made again, up to 3 times.
        for _ in range(3):
            stream = vllm_server.streaming("hello", 500)
            with contextlib.suppress(AssertionError):
                wait_until(lambda: running(vllm_server.metrics()) == 1, 20, "the request counted as running")
            vllm_server.pause()
            paused = time.monotonic()
            if running(vllm_server.metrics()) == 1:
                break
            vllm_server.resume()
            while stream.readline():
                pass
            stream.close()
        else:
            raise AssertionError("the server said no request ran when its engine stopped, 3 times")
        try:
            found = watching.until(stalled, 45)
            waited = time.monotonic() - paused
            finding = next(f for f in found.findings if f.signature == STALL)
            assert 30 <= waited < 40, waited
            assert finding.nodes == ("cpu-node",) and finding.facts["running"] == "1"
            assert int(finding.facts["still_s"]) >= 30
            assert found.serving[0].running == 1 and found.serving[0].tokens_per_s == 0
        finally:
            vllm_server.resume()
        while stream.readline():  # the rest of the answer comes once the engine goes on
            pass
        stream.close()
        watching.until(lambda d: not stalled(d), 10)  # tokens came again
        watching.until(lambda d: d.serving[0].running == 0 and not stalled(d), 10)
        assert watching.state == State.STREAMING.value
    finally:
        watching.stop()


def test_a_nodes_own_localhost_is_read_through_its_ssh_connection(
    vllm_server: VllmServer,
    catalogue: Catalogue,
    sshd_cluster: SshdCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``ssh://node/metrics/PORT``: node-a opens the connection to its localhost itself (the test nodes share
    this machine's loopback), so a server that listens only there is read, under the node's name."""
    sshd_cluster.home_for(tmp_path / "home", monkeypatch)
    (source,) = Opener().open([f"ssh://node-a/metrics/{vllm_server.port}"])
    assert isinstance(source, MetricsSource)
    source.interval = 1.0
    watching = Watching(run(catalogue, [source]))
    try:
        seen = watching.until(lambda d: bool(d.serving), 30)
        vllm_server.complete("hello", 100)
        generated = watching.until(lambda d: any(s.tokens_per_s for s in d.serving), 10)
    finally:
        watching.stop()
    (serving,) = seen.serving
    assert (serving.node, serving.endpoint) == ("node-a", f"localhost:{vllm_server.port}")
    assert generated.serving[0].node == "node-a" and not generated.findings
