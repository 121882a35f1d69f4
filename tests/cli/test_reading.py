"""Bad input never crashes anything and never reaches a terminal raw."""

from __future__ import annotations

import asyncio
import gzip
import json
import lzma
import os
import shlex
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat
from sparktui.core.lines import MAX_LINE
from sparktui.core.pipeline import run
from sparktui.core.sources import bundle
from sparktui.core.sources.base import Extent, LiveSource
from sparktui.core.sources.files import FileRead, FileSource, node_from_path
from sparktui.core.sources.follow import FollowedFile
from sparktui.core.sources.open import Opener, file_sources
from sparktui.core.text import display

from ..conftest import FIXTURES, ROOT

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


def test_display_shows_what_a_terminal_would_hide() -> None:
    """Nothing that changes what a line seems to say is passed raw or dropped: text a carriage return would
    hide behind a shorter part or blanks stays (the CR shown), BEL and BS are shown alike, a DCS goes with
    its payload, and bidi overrides, isolates, marks and zero-width characters are shown escaped."""
    assert display("ran rm -rf /data \x07 \rdone") == "ran rm -rf /data \\x07 \\x0ddone"
    assert display("secret\r      \rok") == "secret\\x0dok"
    assert display("  0%|\r 50%|#####\r100%|##########|") == "100%|##########|"
    assert display("bell\x07 back\x08") == "bell\\x07 back\\x08"
    assert display("a \x1bPq#0;2;0;0;0#0~~@@\x1b\\ b \x1b_apc payload\x1b\\ c") == "a  b  c"
    assert (
        display("x\u202eevil\u202c \u2067iso\u2069 \u200e\u200f")
        == "x\\u202eevil\\u202c \\u2067iso\\u2069 \\u200e\\u200f"
    )
    assert display("zero\u200bwidth\u200c\u200d\u2060\ufeff") == "zero\\u200bwidth\\u200c\\u200d\\u2060\\ufeff"
    assert display("naïve café ünïcode ✓") == "naïve café ünïcode ✓"  # ordinary text stays as it is


def test_matching_sees_the_line_that_display_escapes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bidi override inside a log line does not stop its signature from matching, and its evidence shows
    the override escaped."""
    log = tmp_path / "node.log"
    log.write_text(WARN + " \u202eroot\u200b\n", encoding="utf-8")
    doc = diagnose_json(capsys, log)
    (evidence,) = doc["findings"][0]["evidence"]
    assert evidence["text"] == WARN + " \\u202eroot\\u200b"
    assert "\u202e" not in json.dumps(doc, ensure_ascii=False)


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


def test_report_options_without_a_report_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """--anonymise-hosts and --launch change only what --report writes: alone, they would be ignored without a
    word, so each is refused in one line (--no-redact also keeps the secrets of what is printed)."""
    for option in (["--anonymise-hosts"], ["--launch", "vllm serve m"]):
        assert main(["diagnose", *option, str(HANG)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and f"{option[0]} needs --report DIR" in err


def test_a_broken_source_keeps_the_others(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "a.log"
    good.write_text(WARN + "\n")
    bad = tmp_path / "b.log.gz"
    bad.write_bytes(b"\x1f\x8b broken")
    code = main(["diagnose", "--json", str(good), str(bad)])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 2  # an input could not be read: said by the exit status, whatever the findings
    assert doc["findings"][0]["nodes"] == ["spark-a"]
    assert any("error" in s for s in doc["sources"])


def test_node_names() -> None:
    assert node_from_path(Path("logs/spark-b/vllm.log")) == "spark-b"
    assert node_from_path(Path("rank1.log.gz")) == "rank1"
    # a name that is all escape sequences (trial 2026-12c: an empty node) is spelt out, inert
    assert node_from_path(Path("\x1b]0;evil \u202e gol.log")) == "\\x1b]0;evil \\u202e gol"
    sources, problems = file_sources(["/definitely/not/here"])
    assert sources == [] and problems == ["/definitely/not/here: no such file or directory"]


def test_python_logging_s_plain_format_reads_as_a_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Trial 2026-12c re-check: files of `%(asctime)s %(levelname)s %(message)s` lines (no logger name) were no
    log, so their node was none; they are each their file's node, with their times."""
    for node in ("node-a", "node-b"):
        lines = [f"2026-12-07 00:00:0{i},12{i} INFO tick {i} of {node}" for i in range(5)]
        (tmp_path / f"{node}.log").write_text("\n".join(lines) + "\n")
    assert main(["diagnose", "--json", str(tmp_path / "node-a.log"), str(tmp_path / "node-b.log")]) == 0
    assert [s["node"] for s in json.loads(capsys.readouterr().out)["sources"]] == ["node-a", "node-b"]


def test_logs_of_one_name_in_folders_named_by_node_are_nodes_of_their_own(tmp_path: Path) -> None:
    """``spark-a/worker.log`` and ``spark-b/worker.log``, given one by one (as ``diagnose --follow`` takes
    them) or as their folder: two sources, each on the node its folder names; a bundle's nodes stay."""
    for node in ("spark-a", "spark-b"):
        (tmp_path / "gathered" / node).mkdir(parents=True)
        (tmp_path / "gathered" / node / "worker.log").write_text(WARN + "\n")
    paths = [str(tmp_path / "gathered" / node / "worker.log") for node in ("spark-a", "spark-b")]
    one_by_one, _ = file_sources(paths)
    assert [(s.name, s.node) for s in one_by_one] == [(paths[0], "spark-a"), (paths[1], "spark-b")]
    folder, _ = file_sources([str(tmp_path / "gathered")])
    assert [(s.name, s.node) for s in folder] == [("spark-a/worker.log", "spark-a"), ("spark-b/worker.log", "spark-b")]
    followed = [s for each in Opener().open(paths) for s in ([each] if isinstance(each, FollowedFile) else [])]
    assert [(s.name, s.node) for s in followed] == [(paths[0], "spark-a"), (paths[1], "spark-b")]


def test_notes_beside_the_logs_make_up_no_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file none of whose lines is a log line (a capture's meta.txt) is read, but names no node; a log
    whose lines name none still takes its node from its path, and a report counts the real nodes."""
    hang = FIXTURES / "nccl" / "two-hosts-second-group-not-joined"
    doc = diagnose_json(capsys, hang)
    assert {s["name"]: s["node"] for s in doc["sources"]} == {
        "meta.txt": "",
        "rank0.log": "spark-a",
        "rank1.log": "spark-b",
    }
    assert doc["findings"][0]["nodes"] == ["spark-a", "spark-b"]
    doc = diagnose_json(capsys, FIXTURES / "vllm" / "healthy")
    assert {s["name"]: s["node"] for s in doc["sources"]} == {"meta.txt": "", "server.log": "healthy"}
    assert FileSource(hang / "meta.txt", "meta.txt").default_node() == ""
    assert FileSource(hang / "rank0.log", "rank0.log").default_node() == "spark-a"
    assert main(["diagnose", "--report", str(tmp_path / "report"), str(hang)]) == 1
    assert "117 lines · 2 nodes</span>" in (tmp_path / "report" / "report.html").read_text()
    exported = bundle.load(tmp_path / "report" / "bundle")  # the notes keep no node there either
    assert {s.name: s.node for s in exported.sources} == {
        "meta.txt": "",
        "rank0.log": "spark-a",
        "rank1.log": "spark-b",
    }
    capsys.readouterr()
    doc = diagnose_json(capsys, tmp_path / "report" / "bundle")
    assert {s["name"]: s["node"] for s in doc["sources"]} == {
        "meta.txt": "",
        "rank0.log": "spark-a",
        "rank1.log": "spark-b",
    }


def test_node_from_nccl_prefix(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log"
    log.write_text("hello\n" + WARN + "\n")
    assert FileSource(log, "rank0.log").default_node() == "spark-a"


HANG = FIXTURES / "nccl" / "two-hosts-second-group-not-joined" / "rank0.log"


def run_cli(*args: str, stdin: bytes = b"", shell: str = "") -> subprocess.CompletedProcess[bytes]:
    """The CLI in a process of its own, as a user runs it (``shell``: a bash line, for process substitution)."""
    command = ["bash", "-c", shell] if shell else [sys.executable, "-m", "sparktui", *args]
    return subprocess.run(command, input=stdin, capture_output=True, cwd=ROOT, timeout=60, check=False)


def test_stdin_pipes_and_fifos_are_read_once_as_they_come(tmp_path: Path) -> None:
    lines = HANG.read_bytes().count(b"\n")
    for args, stdin, shell in (
        (("-",), HANG.read_bytes(), ""),
        (("/dev/stdin",), HANG.read_bytes(), ""),
        ((), b"", f"{sys.executable} -m sparktui diagnose --json <(cat {HANG})"),
    ):
        out = run_cli("diagnose", "--json", *args, stdin=stdin, shell=shell)
        doc = json.loads(out.stdout)
        assert doc["sources"][0]["lines"] == lines, (args, shell)
        assert doc["findings"][0]["signature"] == "nccl-second-communicator-not-joined"
    fifo = tmp_path / "rank0.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(HANG.read_bytes()))
    writer.start()  # the writer opens it once diagnose has; nothing is read ahead and lost
    doc = json.loads(run_cli("diagnose", "--json", str(fifo)).stdout)
    writer.join(timeout=10)
    assert doc["sources"][0]["lines"] == lines and doc["sources"][0]["node"] == "spark-a"


def test_a_stream_that_comes_a_line_at_a_time_still_names_its_node() -> None:
    """A pipe hands over what has come: its first block may be one line that names no host (the capture's
    own note); the host its NCCL lines name later is still its node."""
    first, rest = HANG.read_text(encoding="utf-8").split("\n", 1)
    writer = f"printf '%s\\n' {shlex.quote(first)}; sleep 1; printf '%s' {shlex.quote(rest)}"
    shell = f"({writer}) | {sys.executable} -m sparktui diagnose --json -"
    doc = json.loads(run_cli(shell=shell).stdout)
    assert doc["sources"][0]["node"] == "spark-a"
    assert doc["findings"][0]["nodes"][0] == "spark-a"


def test_a_damaged_or_cut_compressed_log_gives_the_lines_before_the_damage(tmp_path: Path) -> None:
    whole = gzip.compress(HANG.read_bytes())
    (tmp_path / "cut.log.gz").write_bytes(whole[: len(whole) // 2])
    damaged = bytearray(whole)
    damaged[len(whole) * 2 // 3] ^= 0xFF
    (tmp_path / "damaged.log.gz").write_bytes(bytes(damaged))
    for name in ("cut.log.gz", "damaged.log.gz"):
        out = run_cli("diagnose", "--json", str(tmp_path / name))
        assert out.returncode == 2
        err = out.stderr.decode()
        assert err.count("\n") == 1 and f"{name}: read failed" in err and "Traceback" not in err
        (source,) = json.loads(out.stdout)["sources"]
        assert 0 < source["lines"] < HANG.read_bytes().count(b"\n"), name


def test_xz_and_concatenated_gzip_members(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.log.xz").write_bytes(lzma.compress(HANG.read_bytes()))
    (tmp_path / "b.log.gz").write_bytes(gzip.compress(HANG.read_bytes()) * 2)  # as `cat x.gz y.gz` makes
    doc = diagnose_json(capsys, tmp_path)
    lines = HANG.read_bytes().count(b"\n")
    assert [(s["name"], s["lines"]) for s in doc["sources"]] == [("a.log.xz", lines), ("b.log.gz", 2 * lines)]
    assert doc["exit"] == 0 or not any("error" in s for s in doc["sources"])


def test_the_cockpit_and_follow_read_compressed_logs_and_streams_once(tmp_path: Path) -> None:
    log = tmp_path / "rank0.log.gz"
    log.write_bytes(gzip.compress(HANG.read_bytes()))
    (source,) = Opener().open([str(log)])
    assert isinstance(source, FileRead)  # decompressed and read to its end, not followed as bytes
    shown = [line.text for u in run(cat.load(), [source], show=True).updates() for line in u.lines]
    assert shown == HANG.read_text().splitlines()


def test_a_live_source_without_follow_says_to_follow_it(capsys: pytest.CaptureFixture[str]) -> None:
    for uri in ("ssh://node5/var/log/rank0.log", "docker://vllm_node"):
        assert main(["diagnose", uri]) == 2
        err = capsys.readouterr().err
        assert f"{uri}: a live source, read with --follow" in err and "no such file" not in err


def test_a_big_file_says_how_much_of_it_was_read(tmp_path: Path) -> None:
    """Trial #39: a 64 MB log showed nothing for 17 s. Each batch says how far the file is read (bytes of its
    size; compressed bytes for a compressed file), and the pipeline knows the size before the first batch."""
    captures = b"".join(p.read_bytes() for p in sorted(FIXTURES.rglob("*.log")))
    plain = tmp_path / "big.log"
    plain.write_bytes(captures * 2)  # a few blocks
    packed = tmp_path / "big.log.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    followed, once = Opener().open([str(plain), str(packed)])
    assert isinstance(once, FileRead) and followed.extent(None) == Extent(0, plain.stat().st_size)

    async def reads(source: LiveSource) -> list[int]:
        seen = []
        async for received in source.stream(None):
            extent = source.extent(received.cursor)
            assert extent is not None and extent.size == source.extent(None).size  # type: ignore[union-attr]
            seen.append(extent.read)
            if extent.read == extent.size and not source.finite:
                break
        return seen

    for source, size in ((followed, plain.stat().st_size), (once, packed.stat().st_size)):
        seen = asyncio.run(reads(source))
        assert len(seen) > 2 and seen == sorted(seen) and seen[0] < size and seen[-1] == size
    pipeline = run(cat.load(), [FileRead(FileSource(plain, "big.log")), once], refresh=False)
    first, last = {}, {}
    for update in pipeline.updates():
        for name, tally in update.tallies.items():
            first.setdefault(name, tally)
            last[name] = tally
    lines = plain.read_bytes().count(b"\n")
    for name, size in (("big.log", plain.stat().st_size), ("big.log.gz", packed.stat().st_size)):
        assert first[name].extent is not None and first[name].extent.size == size
        assert (
            last[name].lines == lines
            and last[name].extent == Extent(size, size)
            and last[name].kind == "file, read once"
        )
    # the text of every line, newlines too, as read: the captures' colour codes and carriage returns are gone
    assert 0.99 * plain.stat().st_size < last["big.log"].bytes < plain.stat().st_size


def test_ray_logs_read_once_end_at_a_head_that_cannot_be_reached(capsys: pytest.CaptureFixture[str]) -> None:
    """``diagnose ray://head`` reads every node's logs once: with no head there, it says so and ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for edge in ([], ["--edge"]):
        assert main(["diagnose", "--quiet", *edge, f"ray://127.0.0.1:{port}"]) == 2
        err = capsys.readouterr().err
        assert f"cannot reach the Ray head at 127.0.0.1:{port}: Connection refused" in err, err
