"""Bad input never crashes anything and never reaches a terminal raw."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.lines import MAX_LINE
from sparktui.core.sources.files import FileSource, node_from_path
from sparktui.core.sources.open import file_sources
from sparktui.core.text import display

WARN = "spark-a:2201:2201 [0] misc/socket.cc:50 NCCL WARN NET/Socket : No usable listening interface found"


def diagnose_json(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict:
    code = main(["diagnose", "--json", *map(str, paths)])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    doc["exit"], doc["stderr"] = code, captured.err
    return doc


def test_undecodable_bytes_nuls_crlf_and_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "node.log"
    log.write_bytes(b"\xff\xfe garbage \x00\x00\r\n\x1b[31m" + WARN.encode() + b"\x1b[0m\r\n\x1b]0;title\x07tail\r\n")
    doc = diagnose_json(capsys, log)
    assert doc["sources"][0]["lines"] == 3
    finding = doc["findings"][0]
    assert finding["evidence"][0]["text"] == WARN
    assert finding["evidence"][0]["line"] == 2
    text = json.dumps(doc)
    assert "\\u001b" not in text and "\\u0000" not in text


def test_display_makes_control_characters_inert() -> None:
    assert display("a\x1b[2Jb\x07c\x00") == "ab\\x07c\\x00"
    assert display("progress 10%\rprogress 100%") == "progress 100%"
    shown = display("x" * 5000)
    assert len(shown) < 2100 and shown.endswith("more characters]")


def test_very_long_lines_are_read_in_pieces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "huge.log"
    log.write_bytes(b"y" * (MAX_LINE * 2 + 10) + b"\n" + WARN.encode() + b"\n")
    doc = diagnose_json(capsys, log)
    assert doc["findings"][0]["signature"] == "nccl-socket-ifname-no-interface"
    assert len(doc["findings"][0]["evidence"][0]["before"][0]) < 2100


def test_gzip_and_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "logs" / "spark-b").mkdir(parents=True)
    with gzip.open(tmp_path / "logs" / "spark-b" / "nccl.log.gz", "wt") as fh:
        fh.write(WARN.replace("spark-a", "spark-b") + "\n")
    (tmp_path / "logs" / "image.png").write_bytes(b"\x89PNG\x00\x00\x00")
    doc = diagnose_json(capsys, tmp_path / "logs")
    assert [s["name"] for s in doc["sources"]] == ["spark-b/nccl.log.gz"]
    assert doc["sources"][0]["node"] == "spark-b"
    assert "image.png: skipped, not a text log" in doc["stderr"]


def test_missing_and_broken_inputs_give_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", str(tmp_path / "absent.log")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no such file or directory" in err
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"not gzip at all")
    assert main(["diagnose", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.log.gz" in err and "Traceback" not in err


def test_a_broken_source_keeps_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "a.log"
    good.write_text(WARN + "\n")
    bad = tmp_path / "b.log.gz"
    bad.write_bytes(b"\x1f\x8b broken")
    code = main(["diagnose", "--json", str(good), str(bad)])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 1
    assert doc["findings"][0]["nodes"] == ["spark-a"]
    assert any("error" in s for s in doc["sources"])


def test_node_names() -> None:
    assert node_from_path(Path("logs/spark-b/vllm.log")) == "spark-b"
    assert node_from_path(Path("rank1.log.gz")) == "rank1"
    sources, problems = file_sources(["/definitely/not/here"])
    assert sources == [] and problems == ["/definitely/not/here: no such file or directory"]


def test_node_from_nccl_prefix(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("hello\n" + WARN + "\n")
    assert FileSource(log, "rank0.log").default_node() == "spark-a"
