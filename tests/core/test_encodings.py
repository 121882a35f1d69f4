"""Logs written in UTF-16 (a Windows tool's redirect, PowerShell's ``>``), with a byte order mark or without
one, little- or big-endian, are told from their first bytes and diagnosed as UTF-8 ones are."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparktui.core.lines import UTF8, UTF16BE, UTF16LE, LineSplitter, encoding_of

from ..conftest import ROOT

LINES = ["INFO 12-03 10:00:00 api_server.py:1 starting", "OSError: [Errno 98] Address already in use", "INFO done"]
TEXT = "\x1b[32mINFO\x1b[0m" + "\r\n".join(LINES)[4:] + "\r\n"  # coloured, as vLLM's logger writes to a terminal
#: How each file is written: its codec, and the byte order mark put first ("" for none).
WRITTEN = {
    "utf-16-le-bom": ("utf-16-le", codecs.BOM_UTF16_LE),
    "utf-16-be-bom": ("utf-16-be", codecs.BOM_UTF16_BE),
    "utf-16-native": ("utf-16", b""),  # Python's own: the machine's order, its mark written by the codec
    "utf-16-le": ("utf-16-le", b""),
    "utf-16-be": ("utf-16-be", b""),
    "utf-8-bom": ("utf-8", codecs.BOM_UTF8),
    "utf-8": ("utf-8", b""),
}


def write(path: Path, how: str, text: str = TEXT) -> Path:
    codec, bom = WRITTEN[how]
    with codecs.open(str(path), "w", encoding=codec) as fh:  # codecs.open: no newline translation
        fh.write(text)
    if bom:
        path.write_bytes(bom + path.read_bytes())
    return path


def diagnose(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", *args], cwd=ROOT, capture_output=True, check=False
    )
    assert done.returncode == 1, done.stderr  # an error finding
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("how", WRITTEN)
def test_a_log_in_any_of_the_encodings_is_diagnosed_alike(tmp_path: Path, how: str) -> None:
    found = diagnose(str(write(tmp_path / "rank0.log", how)))
    assert found["sources"] == [{"name": "rank0.log", "node": "rank0", "lines": 3}]
    (finding,) = found["findings"]  # type: ignore[misc]
    assert finding["signature"] == "server-port-in-use"
    (evidence,) = finding["evidence"]
    assert [*evidence["before"], evidence["text"], *evidence["after"]] == LINES  # no mark, no zeros, no CR


def test_a_folder_of_utf16_logs_is_not_taken_for_binary_files(tmp_path: Path) -> None:
    for how in WRITTEN:
        write(tmp_path / f"{how}.log", how)
    (tmp_path / "core.bin.log").write_bytes(b"\x00\x01\x02\x03" * 256)  # a quarter zeros
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", str(tmp_path)], cwd=ROOT, capture_output=True
    )
    found = json.loads(done.stdout)
    assert sorted(s["name"] for s in found["sources"]) == sorted(f"{how}.log" for how in WRITTEN)
    assert "core.bin.log: skipped, not a text log" in done.stderr.decode()
    assert found["findings"][0]["count"] == len(WRITTEN)


@pytest.mark.parametrize("how", ["utf-16-le-bom", "utf-16-be", "utf-16-le"])
def test_lines_cut_at_every_byte_come_out_whole(tmp_path: Path, how: str) -> None:
    # U+0A41 then U+2000: in UTF-16-LE the bytes 41 0a 00 20 hold 0a 00 at an odd place, not a newline.
    text = "a \u0a41\u2000 b\nnext\n\u00e9t\u00e9 \u4e2d\u6587\nlast, no newline"
    data = write(tmp_path / "x.log", how, text).read_bytes()
    lines = LineSplitter()
    got = [line for i in range(len(data)) for line in lines.feed(data[i : i + 1])] + lines.rest()
    assert got == text.split("\n")
    assert lines.offset == len(data)


def test_the_encoding_is_told_once_from_the_first_bytes() -> None:
    assert encoding_of(codecs.BOM_UTF16_LE) == UTF16LE and encoding_of(codecs.BOM_UTF16_BE) == UTF16BE
    assert encoding_of("OSError".encode("utf-16-be")) == UTF16BE
    assert encoding_of("OSError".encode("utf-16-le")) == UTF16LE
    assert encoding_of(b"\x00" * 64) == UTF8  # a file's hole (copytruncate) is no UTF-16
    assert encoding_of(bytes(range(64))) == UTF8
    assert encoding_of(b"O\x00", final=False) is None  # more may tell
    lines = LineSplitter()
    assert lines.feed(b"ok\n") == ["ok"] and lines.encoding == UTF8
    assert lines.feed("later\n".encode("utf-16-le")) != ["later"]  # told once, at the start, not per line
