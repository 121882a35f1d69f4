"""Incident exports: the four forms from one incident with secrets planted everywhere (real logs, the launch
command, the environment, the audit log, the bundle's description), and what must hold of them: no secret
survives in any file, hosts are replaced consistently, the HTML is inert and renders offline in Chromium,
and the exported bundle analyses to the findings the report shows."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.analysis.progress import Cell, Grid, Row
from sparktui.core.audit import AuditEntry
from sparktui.core.catalogue import Catalogue
from sparktui.core.events import Evidence, Finding, Position, Severity, SourceSummary
from sparktui.core.pipeline import diagnose_files
from sparktui.core.report.export import export
from sparktui.core.report.incident import Environment, Incident
from sparktui.core.report.markdown import diagnosis_markdown
from sparktui.core.report.summary import OUTPUT_LINES, tail
from sparktui.core.sources import bundle
from sparktui.core.sources.open import file_sources

from ..conftest import FIXTURES, ROOT

DEMO = ROOT / "sparktui" / "demo" / "second-communicator"
IFNAME = FIXTURES / "nccl" / "two-hosts-wrong-socket-ifname"
CHROMIUM = shutil.which("chromium")

#: Every planted secret contains this marker (in some case), and nothing else in the incident does.
MARK = "s3cr3t"
PAYLOAD = "<script>alert('x')</script><img src=x onerror=alert(1)>"
#: Lines planted right before an evidence line, so they are in the report as its context.
PLANTED_RANK0 = [
    PAYLOAD,
    "export HF_TOKEN=hf_S3cr3tHuggingFaceToken0123456789ab MASTER_ADDR=gpu-node-17",
    "curl -H 'Authorization: Bearer S3cr3tBearer0123' https://builder:S3cr3tUrlPassword@git.example.com/x.git",
]
PLANTED_RANK1 = [
    "vllm serve m --api-key sk-S3cr3tOpenAIKey0123456789abcd --host 10.20.30.40",
    "AWS_ACCESS_KEY_ID=AKIAS3CR3T0123456789 AWS_SECRET_ACCESS_KEY=S3cr3tAws/Key+0123",
    "DB_PASSWORD=S3cr3tDb MY_SERVICE_SECRET='S3cr3t service' {'api_key': 'S3cr3tDict'}",
]
COMMAND = (
    "HF_TOKEN=hf_S3cr3tCommandToken0123456789abcd vllm serve Qwen/Qwen2.5-7B --api-key S3cr3tApiKey "
    "--tensor-parallel-size 2 --distributed-executor-backend ray --host 10.20.30.40"
)
NOTES = (
    "NCCL_SOCKET_IFNAME=eth9\nOPENAI_API_KEY=S3cr3tEnvKey\nPASSWORD=S3cr3tPass\n"
    "HTTPS_PROXY=http://proxy:S3cr3tProxy@proxy.example.com:3128"
)
HOSTS = ("spark-a", "spark-b", "gpu-node-17", "10.20.30.40", "192.0.2.2", "192.0.2.3")


def insert(path: Path, before_line: int, lines: list[str]) -> None:
    """Put ``lines`` before the 1-based ``before_line`` of the file (and of its .times file, if any)."""
    text = path.read_text().split("\n")
    text[before_line - 1 : before_line - 1] = lines
    path.write_text("\n".join(text))
    times = path.with_name(path.name + ".times")
    if times.exists():
        ms = times.read_text().split()
        ms[before_line - 1 : before_line - 1] = [ms[before_line - 2]] * len(lines)
        times.write_text("\n".join(ms) + "\n")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bundle of real logs: the demo's two timed nodes and a failed interface pin from the same two hosts,
    with secrets and markup planted in lines that end up as evidence context."""
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(DEMO, root, dirs_exist_ok=True)
    (root / "ifname").mkdir()
    for name in ("rank0.log", "rank1.log"):
        shutil.copy(IFNAME / name, root / "ifname" / name)
    insert(root / "ifname" / "rank0.log", 7, PLANTED_RANK0)
    insert(root / "ifname" / "rank1.log", 4, PLANTED_RANK1)
    insert(root / "spark-a" / "nccl.log", 20, ["NCCL_DEBUG=INFO HF_TOKEN=hf_S3cr3tTimedLine0123456789abcdef"])
    manifest = (root / "bundle.toml").read_text()
    manifest = manifest.replace("Two nodes, spark-a", "The password=S3cr3tDescription was set. Two nodes, spark-a")
    manifest += '\n[[sources]]\nname = "ifname/rank0.log"\nnode = "spark-a"\n'
    manifest += '\n[[sources]]\nname = "ifname/rank1.log"\nnode = "spark-b"\n'
    (root / "bundle.toml").write_text(manifest)
    return root


def analyse(path: Path, catalogue: Catalogue) -> Diagnosis:
    sources, problems = file_sources([str(path)])
    assert not problems
    return diagnose_files(sources, catalogue)


@pytest.fixture(scope="module")
def incident(planted: Path, catalogue: Catalogue) -> Incident:
    started = datetime(2026, 11, 30, 4, 40, 12, tzinfo=UTC)
    audit = (
        AuditEntry(
            "curl -sf -H 'Authorization: Bearer S3cr3tAuditBearer' http://spark-a:8000/v1/models",
            "local",
            started,
            7,
            "curl: (7) Failed to connect to spark-a port 8000\nretry with token=S3cr3tOutputToken\n",
            0.2,
            playbook="check-endpoint",
            step="ask the API server for its models",
        ),
        AuditEntry("ss -ltnp", "spark-b", started, 0, "LISTEN 0 4096 10.20.30.40:29500 *:*\n", 0.1),
        AuditEntry("nvidia-smi", "spark-a", started, None),
    )
    return Incident.of_bundle(
        bundle.load(planted),
        analyse(planted, catalogue),
        command=COMMAND,
        audit=audit,
        environment=Environment.current(NOTES),
    )


@pytest.fixture(scope="module")
def exported(incident: Incident, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    export(incident, out)
    return out


@pytest.fixture(scope="module")
def anonymised(incident: Incident, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("anonymised")
    export(incident, out, anonymise_hosts=True)
    return out


def files(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): p.read_text(encoding="utf-8")
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_the_incident_really_holds_the_planted_secrets(incident: Incident, planted: Path) -> None:
    """The secrets are in the analysed evidence, not just in the files: the export has work to do."""
    context = [line for f in incident.diagnosis.findings for e in f.evidence for line in e.before]
    assert any(MARK in line.lower() for line in context)
    assert PAYLOAD in context
    assert MARK in incident.title.lower() + incident.description.lower()


def test_export_writes_four_forms(incident: Incident, tmp_path: Path) -> None:
    written = export(incident, tmp_path)
    names = {str(p.relative_to(tmp_path)) for p in written}
    assert {"report.md", "report.html", "report.json", "bundle/bundle.toml"} <= names
    assert {"bundle/findings.json", "bundle/audit.jsonl"} <= names
    assert {"bundle/spark-a/nccl.log", "bundle/spark-a/nccl.log.times", "bundle/ifname/rank0.log"} <= names
    assert sorted(names) == sorted(files(tmp_path))


@pytest.mark.parametrize("form", ["exported", "anonymised"])
def test_no_planted_secret_survives_in_any_file(form: str, request: pytest.FixtureRequest) -> None:
    out: Path = request.getfixturevalue(form)
    found = {name: text for name, text in files(out).items() if MARK in text.lower()}
    assert not found, {name: [ln for ln in t.splitlines() if MARK in ln.lower()] for name, t in found.items()}
    report = (out / "report.md").read_text()
    assert "HF_TOKEN=[REDACTED]" in report  # what was there stays visible, only its value goes
    assert "--api-key [REDACTED]" in report


def test_report_sections(exported: Path, incident: Incident) -> None:
    md = (exported / "report.md").read_text()
    sections = re.findall(r"^## (.+)$", md, re.MULTILINE)
    assert sections == [
        "Findings",
        "Start-up stages",
        "Inventory",
        "Launch command",
        "Actions taken",
        "Sources",
        "Environment",
    ]
    root = incident.diagnosis.findings[0]
    assert f"**Most likely root cause:** {root.title}" in md
    assert "### 1. " + root.title in md
    assert "exit 7" in md and "did not finish" in md and "check-endpoint" in md
    assert "| sparktui | " in md and "| Python | " in md
    data = json.loads((exported / "report.json").read_text())
    assert data["version"] == 1 and data["report"] == 1
    assert [f["signature"] for f in data["findings"]] == [f.signature for f in incident.diagnosis.findings]
    assert data["redaction"] == {"secrets": True, "hosts": False}
    assert [a["exit_code"] for a in data["audit"]] == [7, 0, None]
    assert data["environment"]["sparktui"] == incident.environment.sparktui
    assert data["inventory"] is None
    assert json.loads((exported / "bundle" / "findings.json").read_text())["findings"] == data["findings"]


def test_evidence_in_markdown_stays_in_code_blocks(exported: Path) -> None:
    """A log line with markup is shown as code, never rendered: each such line sits inside a fence."""
    inside = False
    for line in (exported / "report.md").read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
        elif "<script" in line or "<img" in line:
            assert inside, line
    assert "> " in (exported / "report.md").read_text()


def test_html_escapes_everything_from_logs_and_loads_nothing(exported: Path) -> None:
    page = (exported / "report.html").read_text()
    assert "<script" not in page.lower() and "<img" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert all(href.startswith("#") for href in re.findall(r'href="([^"]*)"', page))
    assert not re.search(r"\bsrc=|@import|url\(", page.replace("&lt;img src=x", ""))
    assert "default-src 'none'" in page


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is installed by the test command (tools/test.sh)")
def test_html_renders_offline_in_headless_chromium(exported: Path, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    url = (exported / "report.html").as_uri()
    run = [CHROMIUM or "chromium", *flags]
    shot = [*run, f"--screenshot={png}", "--window-size=1200,1600", url]
    subprocess.run(shot, capture_output=True, timeout=120, check=True)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (1200, 1600)
    assert len(data) > 50_000  # a blank page of that size compresses to a few kilobytes
    dom = subprocess.run([*run, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "Most likely root cause" in dom
    assert "<script" not in dom and "<img" not in dom


def test_exported_bundle_analyses_to_the_reported_findings(
    exported: Path, incident: Incident, catalogue: Catalogue
) -> None:
    again = analyse(exported / "bundle", catalogue).as_dict()
    report = json.loads((exported / "report.json").read_text())
    assert again["findings"] == report["findings"]
    assert again["stages"] == report["stages"]
    assert again["sources"] == report["sources"]
    original = incident.diagnosis.as_dict()["findings"]
    shape = [(f["signature"], f["nodes"], f["count"], f["first_seen"], f["facts"]) for f in original]
    assert [(f["signature"], f["nodes"], f["count"], f["first_seen"], f["facts"]) for f in again["findings"]] == shape


def test_exported_bundle_keeps_the_timing(exported: Path, planted: Path) -> None:
    for name in ("spark-a/nccl.log", "spark-b/nccl.log"):
        times = (exported / "bundle" / f"{name}.times").read_text()
        assert times == (planted / f"{name}.times").read_text()
        assert len(times.split()) == len((exported / "bundle" / name).read_text().splitlines())
    loaded = bundle.load(exported / "bundle")
    assert loaded.duration_ms == bundle.load(planted).duration_ms
    assert [s.node for s in loaded.sources] == ["spark-a", "spark-b", "spark-a", "spark-b"]
    assert max(t for t, _, _ in loaded.timeline()) == max(t for t, _, _ in bundle.load(planted).timeline())


def test_a_bundle_without_secrets_analyses_to_the_same_findings(tmp_path: Path, catalogue: Catalogue) -> None:
    diagnosis = analyse(DEMO, catalogue)
    export(Incident.of_bundle(bundle.load(DEMO), diagnosis), tmp_path)
    assert analyse(tmp_path / "bundle", catalogue).as_dict() == diagnosis.as_dict()


def test_hosts_are_replaced_everywhere_and_consistently(anonymised: Path, catalogue: Catalogue) -> None:
    for name, text in files(anonymised).items():
        for host in HOSTS:
            assert host not in text.lower(), (name, host)
    data = json.loads((anonymised / "report.json").read_text())
    assert data["redaction"] == {"secrets": True, "hosts": True}
    placeholder = {s["name"]: s["node"] for s in data["sources"]}
    assert placeholder == {
        "node-1/nccl.log": "node-1",
        "node-2/nccl.log": "node-2",
        "ifname/rank0.log": "node-1",
        "ifname/rank1.log": "node-2",
    }
    root = data["findings"][0]
    assert root["nodes"] == ["node-1", "node-2"]
    assert root["evidence"][0]["text"].startswith("node-1:")
    assert "rank 0 on node-1" in root["detail"]
    assert "198.51.100." in json.dumps(data)  # the addresses became documentation addresses
    manifest = bundle.load(anonymised / "bundle")
    assert [(s.name, s.node) for s in manifest.sources] == list(placeholder.items())
    again = analyse(anonymised / "bundle", catalogue).as_dict()
    assert again["findings"] == data["findings"]


def test_diagnosis_markdown_is_the_cli_form_and_survives_backticks() -> None:
    line = "weird ```` fence and <b>bold</b> | pipe"
    finding = Finding(
        "x-sig",
        "x_category",
        Severity.ERROR,
        "Something broke",
        "It broke.",
        ("fix-it",),
        Position("a.log", 5),
        nodes=["n1"],
        count=1,
        evidence=[Evidence("a.log", 5, "n1", line, ("before",), ("after",))],
        facts={"what": "a`b"},
    )
    grid = Grid("nccl", "NCCL", ("comm | 1",), (Row("n`1", "rank 0", (Cell("init_start", "init", "init"),)),), "")
    diagnosis = Diagnosis([SourceSummary("a.log", "n1", 9)], [finding], {"n1": {"nccl": "init"}}, (grid,))
    md = diagnosis_markdown(diagnosis)
    assert "`````text\n  4  before\n> 5  " + line + "\n  6  after\n`````" in md
    assert "``what=a`b``" in md
    assert "| node | rank | comm \\| 1 |" in md
    assert "| ``n`1`` | rank 0 | init |" in md


def test_a_quiet_incident_without_logs(tmp_path: Path, catalogue: Catalogue) -> None:
    diagnosis = analyse(FIXTURES / "nccl" / "two-hosts-healthy", catalogue)
    assert not diagnosis.findings
    written = export(Incident(diagnosis, title="Healthy <run>"), tmp_path)
    assert sorted(str(p.relative_to(tmp_path)) for p in written) == [
        "bundle/audit.jsonl",
        "bundle/findings.json",
        "report.html",
        "report.json",
        "report.md",
    ]
    md = (tmp_path / "report.md").read_text()
    assert md.startswith("# Healthy \\<run\\>\n") and "**No findings** in " in md
    assert "No command was run from sparktui." in md and "Not given." in md
    page = (tmp_path / "report.html").read_text()
    assert "<h1>Healthy &lt;run&gt;</h1>" in page and "No findings" in page


def test_long_command_output_is_cut_to_its_end_and_made_inert() -> None:
    output = "".join(f"line {n}\x1b[31m red\x1b[0m\x07\n" for n in range(OUTPUT_LINES + 50))
    lines, cut = tail(output)
    assert cut == 50 and len(lines) == OUTPUT_LINES
    assert lines[0] == "line 50 red\\x07" and lines[-1] == f"line {OUTPUT_LINES + 49} red\\x07"


def test_reports_show_the_rank_by_stage_grid(catalogue: Catalogue, tmp_path: Path) -> None:
    diagnosis = analyse(FIXTURES / "nccl4" / "four-hosts-first-collective-hang", catalogue)
    incident = Incident(diagnosis)
    export(incident, tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert "**NCCL**: rank 3 on node-d is behind the other ranks." in md
    assert "| `node-d` | **rank 3** | in use | **ready** |" in md
    page = (tmp_path / "report.html").read_text()
    assert '<table class="grid">' in page and '<td class="behind">ready</td>' in page
    data = json.loads((tmp_path / "report.json").read_text())
    assert [r["behind"] for r in data["progress"][0]["rows"]] == [False, False, False, True]


def test_a_sources_other_names_and_its_notes_are_in_every_form(tmp_path: Path) -> None:
    """What the reader must know of a source (another name of its node, lines lost to a rotation) is kept in
    each form, redacted like the rest."""
    lost = "lines lost: while /var/log/rank0.log was not followed, it was rotated and the old file is gone"
    source = SourceSummary("ssh://node5/var/log/rank0.log", "node5", 9, None, ("spark-a",), (lost,))
    incident = Incident(Diagnosis([source], [], {}, ()), title="notes")
    forms = {p.suffix: p.read_text() for p in export(incident, tmp_path) if p.suffix in (".md", ".html", ".json")}
    assert f"| `node5` (`spark-a` in its logs) | 9 | {lost} |" in forms[".md"]
    assert '<span class="node">spark-a</span> in its logs)' in forms[".html"] and lost in forms[".html"]
    (summary,) = json.loads(forms[".json"])["sources"]
    assert (summary["hosts"], summary["notes"]) == (["spark-a"], [lost])
