"""NCCL's RAS report, as the H100 capture of tests/fixtures/stacks/nccl-ras holds it: read into its entries,
asked by the node script of ``sparktui stacks`` (over a real TCP connection on loopback, to a peer that answers
as the captured RAS thread did: no GPU here runs NCCL), and shown in the live watch's finding."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.liveness.verdict import builtin_words, finding
from sparktui.core.report.fold import now_text
from sparktui.core.report.markdown import stacks_markdown
from sparktui.core.settings import SettingsError, StacksSettings, load
from sparktui.core.stacks import ras
from sparktui.core.stacks import snapshot as snapshots

from .test_liveness import reading_of
from .test_read import FIXTURES, ranks_of

CAPTURED = FIXTURES / "nccl-ras"
#: The mismatch scenario's entries: rank 3 had ended, rank 0 reported its peer's loss.
MISMATCH = [
    "INCOMPLETE: Missing communicator data from 1 job process: Process 798 on node 192.0.2.2 managing GPU 0",
    "#0-0 (2c2a0dd45997557c) INCOMPLETE: Missing communicator data from 1 rank: Rank 3 -- GPU 0 managed by "
    "process 798 on node 192.0.2.2",
    "#0-0 (2c2a0dd45997557c) ERROR: Asynchronous error on 1 rank: Rank 0 reported Remote process error -- GPU 0 "
    "managed by process 794 on node 192.0.2.2",
]


def exchanges(scenario: str, form: str) -> list[tuple[str, str]]:
    """The first conversation in ``form`` (json, text) of the capture: each line sent, with what came back."""
    text = (CAPTURED / f"nccl-{scenario}" / "ras.txt").read_text()
    start = text.index("> CLIENT PROTOCOL", text.index(f"> SET FORMAT {form}") - 60)
    lines = text[start:].split("\n# asked")[0].split("\n")
    sent = [i for i, line in enumerate(lines) if line.startswith("> ")]
    said = []
    for k, i in enumerate(sent[:4]):
        end = sent[k + 1] if k + 1 < len(sent) else len(lines)
        said.append((lines[i][2:], "\n".join(lines[i + 1 : end])))
    return said


def report(scenario: str) -> list[str]:
    return exchanges(scenario, "text")[3][1].split("\n")


def test_the_entries_of_a_report_each_in_a_line() -> None:
    assert ras.said(report("mismatch")) == MISMATCH
    for scenario in ("second-group", "busy-python", "healthy"):  # RAS sees none of these hangs
        assert ras.said(report(scenario)) == []
    assert ras.said(exchanges("mismatch", "json")[3][1].split("\n")) == []  # not the report's text
    assert ras.said([]) == []


class RecordedPeer:
    """A TCP peer on loopback answering each line of NCCL's RAS client protocol as the captured RAS thread did
    (the report: the capture's), and keeping what it was sent."""

    def __init__(self, scenario: str) -> None:
        self.answers = {line.split()[0]: answer for line, answer in exchanges(scenario, "text")}
        self.sent: list[str] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn, conn.makefile("rb") as lines:
                for raw in lines:
                    line = raw.decode().strip()
                    self.sent.append(line)
                    conn.sendall(self.answers[line.split()[0]].encode() + b"\n")
                    if line == "VERBOSE STATUS":
                        break


@pytest.fixture
def peer() -> Iterator[RecordedPeer]:
    p = RecordedPeer("mismatch")
    yield p
    p.server.close()


def test_the_node_script_asks_ras_and_stacks_says_it(
    peer: RecordedPeer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no cluster file: this machine
    main(["stacks", "--json", "--samples", "1", "--ras-port", str(peer.port)])
    result = json.loads(capsys.readouterr().out)
    assert peer.sent == ["CLIENT PROTOCOL 2", "TIMEOUT 3", "SET FORMAT text", "VERBOSE STATUS"]
    assert result["ras"] == {"local": MISMATCH}
    main(["stacks", "--samples", "1", "--ras-port", str(peer.port)])
    shown = capsys.readouterr().out
    assert f"NCCL's RAS on local: {MISMATCH[1]}" in " ".join(shown.split())
    main(["stacks", "--json", "--samples", "1", "--ras-port", "0"])
    assert json.loads(capsys.readouterr().out)["ras"] == {} and len(peer.sent) == 8  # not asked


def test_the_hang_finding_says_what_ras_said() -> None:
    reading = reading_of(ranks_of(FIXTURES / "nccl" / "second-group", 4))
    snapshot = replace(reading.snapshot, ras=tuple(("node-a", said) for said in MISMATCH))
    found = finding(replace(reading, snapshot=snapshot), builtin_words())
    assert found is not None
    assert f"- NCCL's RAS on node-a: {MISMATCH[1]}" in found.detail.splitlines()
    kept = snapshot.as_dict()
    assert kept["ras"][1] == {"node": "node-a", "said": MISMATCH[1]}
    assert snapshots.from_dict(kept).ras == snapshot.ras  # a bundle's stacks.json keeps it
    assert f"- node-a: {MISMATCH[2]}" in stacks_markdown(snapshot)  # the report's "Where each rank is"
    assert f"- NCCL's RAS on node-a: {MISMATCH[0]}" in now_text(snapshot, found).splitlines()  # the folded "now"


def test_the_port_is_a_setting(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    assert StacksSettings().ras_port == 28028
    path.write_text("[stacks]\nras_port = 0\n")
    assert load(path).stacks.ras_port == 0
    for wrong in ("70000", "-1", '"28028"', "true"):
        path.write_text(f"[stacks]\nras_port = {wrong}\n")
        with pytest.raises(SettingsError, match=r"stacks\.ras_port: must be a TCP port"):
            load(path)
