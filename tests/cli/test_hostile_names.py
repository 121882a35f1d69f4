"""The trial's repros (2026-12c, §4.12 and §4.13): escape sequences and bidirectional or invisible characters in
a file's name, a bundle's node and a fact taken from a log are shown inert by every front end that prints them
(text, Markdown, a report's Markdown and HTML, the command to approve), and a value with them is refused where
it would go into a command, as a carriage return is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.kinds import fits
from sparktui.core.text import display_text, json_inert, json_inert_pieces

from ..conftest import FIXTURES

#: What a hostile name holds: a title-setting OSC (ended by BEL), a right-to-left override; and a bundle's node
#: also a CSI that clears the screen.
HOSTILE_NAME = "name\x1b]0;PWNED-TITLE\x07\u202egol.log"
#: The trial's fact: a model path with a right-to-left override in it.
BIDI_LINE = "ValueError: Invalid repository ID or local directory specified: '/models/Q\u202ewenx'.\n"
#: A failure the catalogue names, from a captured vLLM log (the lines around its error).
CAPTURED = FIXTURES / "vllm" / "config-json-missing" / "server.log"
#: What must never reach a terminal or a reader raw: ESC, BEL, the C1 CSI, and what reorders or hides text.
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\u200b", "\ufeff")


def _raw_in(text: str) -> list[str]:
    return [repr(c) for c in RAW if c in text]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """The trial's folder: a log under a hostile name (the lines of a captured failure) and a log whose fact
    holds a bidirectional override."""
    folder = tmp_path / "logs"
    folder.mkdir()
    lines = CAPTURED.read_text().splitlines(keepends=True)
    error = next(i for i, line in enumerate(lines) if "Invalid repository ID" in line)
    (folder / HOSTILE_NAME).write_text("".join(lines[error - 5 : error + 2]))
    (folder / "bidi.log").write_text(BIDI_LINE)
    return folder


def _sparktui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sparktui", *args], capture_output=True, text=True, cwd=cwd)


def test_diagnose_text_and_markdown_show_names_and_facts_inert(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for form in ([], ["--format", "md"]):
        assert main(["diagnose", *form, str(logs)]) == 1
        out = capsys.readouterr().out
        assert not _raw_in(out), form
        assert "name\\u202egol" in out  # the node named from the file, its override shown
        assert "PWNED-TITLE" not in out  # the title sequence removed with its payload, as in a log line
        assert "model=/models/Q\\u202ewenx" in out


def test_a_report_shows_names_and_facts_inert_in_markdown_and_html(logs: Path, tmp_path: Path) -> None:
    report = tmp_path / "report"
    done = _sparktui("diagnose", str(logs), "--report", str(report), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    for name in ("report.md", "report.html"):
        text = (report / name).read_text()
        assert not _raw_in(text), name
        assert "Q\\u202ewenx" in text and "name\\u202egol" in text
    manifest = (report / "bundle" / "bundle.toml").read_text()
    assert "PWNED" not in manifest and "\\u001b" not in manifest  # the node it writes is the shown one
    # JSON keeps the fact as the log wrote it, for a program, written as JSON's own escape: inert on a terminal
    text = (report / "report.json").read_text()
    assert not _raw_in(text) and "Q\\u202ewenx" in text
    assert "/models/Q\u202ewenx" in json.dumps(json.loads(text), ensure_ascii=False)


def test_diagnose_json_keeps_a_fact_whole_and_writes_it_inert(logs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "--json", str(logs)]) == 1
    out = capsys.readouterr().out
    assert not _raw_in(out)
    (finding,) = json.loads(out)["findings"]
    assert finding["facts"]["model"] == "/models/Q\u202ewenx"  # the value itself, as the log wrote it


def test_a_bundle_node_with_escapes_is_shown_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The trial's bundle: ``node`` in bundle.toml holds an OSC title, BEL and an override."""
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "a.log").write_text(BIDI_LINE)
    (folder / "bundle.toml").write_text(
        'format = 1\n[[sources]]\nname = "a.log"\nnode = "evil\\u001b]0;PWNED-TITLE\\u0007\\u001b[2J\\u202enode"\n'
    )
    for form in ([], ["--format", "md"]):
        assert main(["diagnose", *form, str(folder)]) == 1
        out = capsys.readouterr().out
        assert not _raw_in(out) and "evil\\u202enode" in out and "PWNED" not in out


def test_the_command_to_approve_never_holds_a_bidi_fact(tmp_path: Path) -> None:
    """``play copy-model-to-nodes --from`` the log with the override: refused, in one line, the value escaped."""
    log = tmp_path / "bidi.log"
    log.write_text(BIDI_LINE)
    done = _sparktui("play", "copy-model-to-nodes", "--from", str(log), "--dry-run", cwd=tmp_path)
    assert done.returncode != 0
    assert not _raw_in(done.stdout + done.stderr)
    refusal = [line for line in done.stderr.splitlines() if "refused" in line]
    assert refusal == ["sparktui: copy-model-to-nodes: refused model='/models/Q\\u202ewenx': not a valid path"]


HIDDEN = ["\r", "\x0b", "\x1b", "\x85", "\u202e", "\u2066", "\u2069", "\u200b", "\u200f", "\ufeff"]


@pytest.mark.parametrize("char", HIDDEN)
def test_the_kinds_that_take_any_text_refuse_hidden_characters(char: str) -> None:
    for kind, value in (("path", "/models/Q{}wen"), ("text", "a{}b"), ("env", "A=b{}c"), ("argv", "ls a{}b")):
        assert fits(kind, value.format(""))
        assert not fits(kind, value.format(char)), (kind, char)
    assert fits("path", "/models/Qwén3-ÄÖ/日本")  # text of any script is still a path


def test_display_text_keeps_lines_and_shows_every_hidden_character() -> None:
    assert display_text("a\x1b]0;t\x07b\n\u202ec") == "ab\n\\u202ec"
    assert display_text("plain\nlines") == "plain\nlines"
    long = "x" * 5000
    assert display_text(long) == long  # a whole document is never cut


def test_json_written_in_blocks_is_what_one_piece_would_be() -> None:
    """diagnose --json streams the encoder's tokens in blocks: hidden characters wherever the blocks end."""
    pieces = ['{"a": "x', "\u202e", 'y"', ', "b": "', "\u200b" * 5, '"}'] * 50
    whole = json_inert("".join(pieces))
    assert "".join(json_inert_pieces(pieces, size=7)) == whole
    one = json_inert("".join(pieces[:6]))
    assert json.loads(one) == {"a": "x\u202ey", "b": "\u200b" * 5} and "\\u202e" in one
