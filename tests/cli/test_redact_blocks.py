"""A private key (any armoured block) near an evidence line leaves nothing of its body in what is shared:
the report in its three forms, the bundle (its logs and findings.json) and the cockpit's copy of a finding,
though the lines around an evidence line hold only part of the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat
from sparktui.core.pipeline import diagnose_files
from sparktui.core.redact import PEM_LINES, REDACTED, PieceRedactor, redact
from sparktui.core.sources.files import FileSource
from sparktui.tui.screens.finding import finding_markdown

BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "R2VuZXJhdGVkIGJ5IHRoZSB0ZXN0IG9ubHkgZm9yIGl0", "c2Vs"]
ERROR = "OSError: [Errno 98] Address already in use"
#: Where the block stands beside the evidence line (the ERROR), which keeps 3 lines before and after it:
#: wholly among them, its BEGIN line out of them, its END line out of them.
LAYOUTS = {
    "whole, before": ["starting", "-----BEGIN PRIVATE KEY-----", BODY[0], "-----END PRIVATE KEY-----", ERROR],
    "begun before": ["-----BEGIN RSA PRIVATE KEY-----", *BODY, "-----END RSA PRIVATE KEY-----", ERROR],
    "ending after": [ERROR, "-----BEGIN OPENSSH PRIVATE KEY-----", *BODY, "-----END OPENSSH PRIVATE KEY-----"],
    "a certificate": [ERROR, "x", "-----BEGIN CERTIFICATE-----", *BODY, "-----END CERTIFICATE-----"],
}


def log(folder: Path, layout: str) -> Path:
    folder.mkdir(parents=True)
    lines = [f"INFO 12-03 10:00:{i:02d} api_server.py:1 step {i}" for i in range(8)]
    (folder / "vllm.log").write_text("\n".join([*lines, *LAYOUTS[layout], *lines]) + "\n")
    return folder


@pytest.mark.parametrize("layout", LAYOUTS)
def test_no_body_line_reaches_a_report_or_the_bundle(tmp_path: Path, layout: str) -> None:
    logs = log(tmp_path / "logs", layout)
    assert main(["diagnose", str(logs), "--report", str(tmp_path / "rep")]) == 1  # an error finding
    written = [p for p in (tmp_path / "rep").rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"report.md", "report.html", "report.json", "findings.json", "vllm.log"}
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert not [part for part in BODY if part in text], path
    assert ERROR in (tmp_path / "rep" / "report.md").read_text()  # the evidence line itself stays
    kept = (tmp_path / "rep" / "bundle" / "vllm.log").read_text()
    assert kept.count("\n") == (logs / "vllm.log").read_text().count("\n")


@pytest.mark.parametrize("fmt", ["text", "md", "json"])
def test_what_diagnose_prints_holds_no_secret(tmp_path: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Trial 12b §4 item 20 (#102): stdout is redacted as a report is, in every format; --no-redact keeps it."""
    logs = log(tmp_path / "logs", "ending after")
    with open(logs / "vllm.log", "a") as more:
        more.write(f"{ERROR} HF_TOKEN=hf_{'a' * 34}\n")
    assert main(["diagnose", "--format", fmt, str(logs)]) == 1
    out = capsys.readouterr().out
    assert ERROR in out and REDACTED in out and not [part for part in [*BODY, "hf_aaaa"] if part in out]
    assert main(["diagnose", "--format", fmt, "--no-redact", str(logs)]) == 1
    assert "hf_aaaa" in capsys.readouterr().out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_cockpits_copy_of_a_finding_holds_no_body_line(tmp_path: Path, layout: str) -> None:
    logs = log(tmp_path / "logs", layout)
    (finding,) = diagnose_files([FileSource(logs / "vllm.log", "vllm.log")], cat.load()).findings
    assert any(part in "\n".join([*e.before, *e.after]) for e in finding.evidence for part in BODY)
    copied = finding_markdown(finding)
    assert ERROR in copied and not [part for part in BODY if part in copied]


def test_a_text_cut_out_of_a_log_loses_the_part_of_a_key_it_holds() -> None:
    assert redact(f"{BODY[1]}\n{BODY[2]}\n-----END PRIVATE KEY-----\nafter") == f"{REDACTED}\n" * 3 + "after"
    assert redact(f"before\n-----BEGIN EC PRIVATE KEY-----\n{BODY[0]}") == f"before\n{REDACTED}\n{REDACTED}"
    stray = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n" + "line\n" * (PEM_LINES + 5)
    assert redact(stray).split("\n")[PEM_LINES : PEM_LINES + 3] == [REDACTED, "line", "line"]  # not forever
    assert redact("a -----END banner----- b") == "a -----END banner----- b"  # no key, certificate or PGP


def test_a_stream_followed_from_its_start_keeps_the_lines_before_a_lone_end() -> None:
    pieces = PieceRedactor()
    assert pieces("x\n-----END RSA PRIVATE KEY-----\ny\n") == "x\n-----END RSA PRIVATE KEY-----\ny\n"
    assert pieces(f"-----BEGIN CERTIFICATE-----\n{BODY[0]}\n") == f"{REDACTED}\n{REDACTED}\n"
    assert pieces(f"{BODY[1]}\n-----END CERTIFICATE-----\nok\n") == f"{REDACTED}\n{REDACTED}\nok\n"
