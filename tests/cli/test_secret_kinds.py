"""The trial's repro (2026-12c X6, §4.14): a bare Slack, GitLab and npm token and a bare AWS secret access key
within three lines of an error leaked in every "redacted" output; now none is left in any of them: ``diagnose``
as text, Markdown and JSON, and every file of a report (Markdown, HTML, JSON, findings, the bundle's logs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktui.cli import main

from ..conftest import FIXTURES

#: What the trial put in a log: each kind as a log prints it, bare.
SECRETS = {
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx": "bot {} connected",
    "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn": "cloning with {}",
    "npm_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2": "registry auth {}",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY": "aws credentials: {}",
}
#: A failure the catalogue names, from a captured vLLM log.
CAPTURED = FIXTURES / "vllm" / "config-json-missing" / "server.log"


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """The captured log with the secrets in the three lines before its error and the line after it."""
    lines = CAPTURED.read_text().splitlines()
    error = next(i for i, line in enumerate(lines) if "Invalid repository ID" in line)
    shown = [template.format(secret) for secret, template in SECRETS.items()]
    lines[error:error] = shown[:3]
    lines.insert(error + 4, shown[3])
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n")
    return path


def _leaks(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret in text or secret[8:] in text]


def test_no_new_kind_of_secret_is_left_in_diagnose(log: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for form in ([], ["--format", "md"], ["--json"]):
        assert main(["diagnose", *form, str(log)]) == 1
        out = capsys.readouterr().out
        assert "Invalid repository ID" in out
        assert not _leaks(out), form
    assert main(["diagnose", "--json", "--no-redact", str(log)]) == 1
    assert len(_leaks(capsys.readouterr().out)) == len(SECRETS)  # they were in the evidence's context


def test_no_new_kind_of_secret_is_left_in_any_file_of_a_report(log: Path, tmp_path: Path) -> None:
    report = tmp_path / "report"
    assert main(["diagnose", str(log), "--report", str(report)]) == 1
    files = [p for p in report.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"report.md", "report.html", "report.json", "bundle.toml", "server.log"}
    for path in files:
        assert not _leaks(path.read_text(errors="replace")), path
