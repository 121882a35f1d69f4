"""Builds read from their files (issue 41): the probe's ELF reader on this machine's real libraries, the
facts of the released NCCL wheels (``tests/fixtures/builds/nccl-wheels.json``, read from the wheels by
``tools/capture/nccl_wheels.py``) against the advisories, systemd-logind's settings as loginctl and
logind.conf say them, and the build table."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparktui.core.inventory import builds, image_probe, rules
from sparktui.core.inventory.facts import NodeInventory
from sparktui.core.inventory.image import from_json
from sparktui.core.inventory.names import node_facts

WHEELS = json.loads((Path(__file__).parents[1] / "fixtures" / "builds" / "nccl-wheels.json").read_text())
ADVISORIES = {r.id: r for r in rules.advisories(rules.builtin())}
#: The NCCL advisories that name a hang of the proxy or a regression by version and build.
ARM_CAS = "nccl-before-2-29-3-arm-cas-hang-gcc-before-10"
WEDGE_2289 = "nccl-2-28-9-proxy-wedge-aarch64"
HANG_2292 = "nccl-2-29-2-regression-hang"


def verdicts(wheel: dict[str, object], **more: object) -> dict[str, bool | None]:
    """Every NCCL advisory over the facts a node loading this wheel's library gives: its version, its ELF
    architecture and compiler, on a node of that architecture in a pair."""
    facts = {
        "node.name": "spark-a",
        "node.arch": wheel["arch"],
        "probe.nccl": wheel["version"],
        "probe.nccl_arch": wheel["arch"],
        "probe.nccl_gcc": wheel["gcc"],
        "probe.nccl_build_id": wheel["build_id"],
        "cluster.nodes": 2,
        **more,
    }
    facts = {k: v for k, v in facts.items() if v != ""}  # a fact not read is absent, as node_facts leaves it
    return {
        rule.id: rules.run_node(rule, "spark-a", facts, {}).fired  # type: ignore[arg-type]
        for rule in ADVISORIES.values()
        if rule.advisory is not None and rule.advisory.component == "nccl"
    }


def table() -> list[tuple[str, str, str, str, str]]:
    """version x architecture x compiler -> the advisories that fire (for the issue's note)."""
    rows = []
    for wheel in WHEELS:
        fired = sorted(k for k, v in verdicts(wheel).items() if v)
        rows.append((wheel["package"], wheel["version"], wheel["arch"], f"gcc {wheel['gcc']}", ", ".join(fired) or "-"))
    return rows


def test_the_wheels_facts_are_what_their_libraries_say() -> None:
    assert len(WHEELS) >= 20
    for wheel in WHEELS:
        assert wheel["says"].startswith(f"NCCL version {wheel['version']}+cuda")
        assert wheel["arch"] == wheel["platform"] and len(wheel["build_id"]) == 40 and len(wheel["sha256"]) == 64
        assert wheel["gcc"] and any(c.startswith("GCC:") for c in wheel["compilers"])
    assert {w["arch"] for w in WHEELS} == {"x86_64", "aarch64"}
    assert len({w["build_id"] for w in WHEELS}) == len(WHEELS)  # every wheel is another build


def test_the_affected_aarch64_wheels_are_flagged_and_the_fixed_ones_are_not() -> None:
    for wheel in WHEELS:
        said = verdicts(wheel)
        version = tuple(int(n) for n in wheel["version"].split("."))
        arm = wheel["arch"] == "aarch64"
        assert said[ARM_CAS] is (arm and (2, 29) <= version < (2, 29, 3)), wheel["wheel"]
        assert said[WEDGE_2289] is (arm and version == (2, 28, 9)), wheel["wheel"]
        assert said[HANG_2292] is (version == (2, 29, 2)), wheel["wheel"]
        if version >= (2, 31, 2):
            assert not [k for k, v in said.items() if v], wheel["wheel"]


def test_the_same_release_built_with_a_newer_gcc_is_not_the_proxy_deadlock() -> None:
    pip = next(w for w in WHEELS if w["version"] == "2.28.9" and w["arch"] == "aarch64")
    assert verdicts(pip)[WEDGE_2289] is True
    assert verdicts({**pip, "gcc": "13.3.0"})[WEDGE_2289] is False
    assert verdicts({**pip, "gcc": ""})[WEDGE_2289] is None  # a compiler not read: it cannot decide


def test_a_pip_build_beside_another_host_build_of_2_28_9_is_named() -> None:
    cu13, cu12 = (next(w for w in WHEELS if w["package"] == p and w["version"] == "2.28.9" and w["arch"] == "aarch64")
                  for p in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"))  # fmt: skip
    named = "nccl-2-28-9-pip-build-differs-from-system"
    assert verdicts(cu13, **{"host.nccl": "2.28.9", "host.nccl_build_id": cu12["build_id"]})[named] is True
    assert verdicts(cu13, **{"host.nccl": "2.28.9", "host.nccl_build_id": cu13["build_id"]})[named] is False


def test_the_elf_reader_reads_a_real_library_as_readelf_does() -> None:
    python = Path(sys.executable).resolve()
    found = image_probe.elf_build(str(python), b"")
    assert found["sha256"] == hashlib.sha256(python.read_bytes()).hexdigest()
    assert found["arch"] in ("x86_64", "aarch64")
    readelf = shutil.which("readelf")
    assert readelf is not None  # this machine's binutils, to compare with
    notes = subprocess.run([readelf, "-n", str(python)], capture_output=True, text=True, check=True).stdout
    assert found["build_id"] and f"Build ID: {found['build_id']}" in notes
    comment = subprocess.run([readelf, "-p", ".comment", str(python)], capture_output=True, text=True).stdout
    assert all(c in comment for c in found["compilers"])


def test_a_file_that_is_not_elf_says_so() -> None:
    with pytest.raises(ValueError, match="not a 64-bit ELF"):
        image_probe.elf_read(io.BytesIO(b"#!/bin/sh\necho hello\n" * 4))
    found = image_probe.elf_build(__file__)
    assert found["elf_error"] == "not a 64-bit ELF file" and found["sha256"]


def test_gcc_versions_from_comment_sections() -> None:
    arm = [
        "GCC: (GNU) 8.5.0 20210514 (Red Hat 8.5.0-21)",
        "GCC: (GNU Toolchain for the A-profile Architecture 8.3-2019.03 (arm-rel-8.36)) 8.3.0",
    ]
    assert image_probe.gcc_version(arm) == "8.5.0"
    assert image_probe.gcc_version(["GCC: (Ubuntu 13.2.0-23ubuntu4) 13.2.0"]) == "13.2.0"
    assert image_probe.gcc_version(["clang version 18.1.3"]) is None


def test_the_host_reader_prints_this_machines_builds_with_the_kernels_compiler() -> None:
    source = Path(image_probe.__file__).read_text()
    ran = subprocess.run([sys.executable, "-", "host"], input=source, capture_output=True, text=True, timeout=60)
    found = builds.host_builds(ran.stdout)
    kernel = next(b for b in found if b.component == "kernel")
    assert kernel.place == "host" and kernel.gcc and kernel.version
    assert all(b.place == "host" for b in found)


def test_logind_settings_from_loginctl_and_the_files() -> None:
    said = builds.logind(
        "uid 1000\nsystemd 255 (255.4-1ubuntu8.6)\nRemoveIPC=yes\nKillUserProcesses=no\nLinger=no\n"
        "/etc/systemd/logind.conf: RemoveIPC=no\n"
    )
    assert said == builds.Logind(1000, "255", "yes", "no", "no")  # loginctl's word over the file's
    # this machine: loginctl cannot reach logind (no systemd as init), logind.conf lists only the defaults
    here = builds.logind(
        "uid 0\nsystemd 252 (252.38-1~deb12u1)\n"
        "/etc/systemd/logind.conf: #KillUserProcesses=no\n/etc/systemd/logind.conf: #RemoveIPC=yes\n"
    )
    assert here == builds.Logind(0, "252", "yes", "no", "no")
    assert builds.logind("uid 1000\n") == builds.Logind(1000)  # no systemd: nothing known
    files = builds.logind("uid 1001\n/etc/systemd/logind.conf.d/ipc.conf: RemoveIPC=no\nlinger file\n")
    assert (files.remove_ipc, files.linger) == ("no", "yes")
    with pytest.raises(builds.Unreadable):
        builds.logind("RemoveIPC=yes")


def test_logind_facts_fire_the_removeipc_advisory() -> None:
    inv = NodeInventory("spark-b", logind=builds.Logind(1000, "255", "yes", "no", "no"))
    facts = node_facts(inv, head=False, cluster={"cluster.nodes": 2}).values
    rule = ADVISORIES["systemd-logind-removeipc-ssh-workers"]
    assert rules.run_node(rule, "spark-b", facts, {}).fired is True
    lingering = node_facts(replace_logind(inv, linger="yes"), head=False, cluster={"cluster.nodes": 2}).values
    assert rules.run_node(rule, "spark-b", lingering, {}).fired is False


def replace_logind(inv: NodeInventory, **changes: str) -> NodeInventory:
    from dataclasses import replace

    assert inv.logind is not None
    return replace(inv, logind=replace(inv.logind, **changes))


def test_the_probes_json_gives_the_image_builds_torchs_nccl_first() -> None:
    wheel = next(w for w in WHEELS if w["version"] == "2.29.2" and w["arch"] == "aarch64")
    library = {"path": "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2", "source": "found", **wheel}
    found = from_json("container vllm_node", {"packages": {"torch": None}, "nccl_library": library, "builds": {
        "ray": {"version": "2.60.0", "path": "/x/ray/_raylet.so", "gcc": "10.2.1", "build_id": "c7", "sha256": "d8"},
    }})  # fmt: skip
    assert [b.component for b in found.builds] == ["nccl", "ray"]
    nccl = found.builds[0]
    assert (nccl.version, nccl.arch, nccl.gcc, nccl.build_id) == ("2.29.2", "aarch64", "8.5.0", wheel["build_id"])
    facts = node_facts(NodeInventory("spark-a", arch="aarch64", probe=found), head=True).values
    assert (facts["probe.nccl"], facts["probe.nccl_gcc"], facts["probe.nccl_arch"]) == ("2.29.2", "8.5.0", "aarch64")
    lines = builds.lines(NodeInventory("spark-a", probe=found).build_rows())
    assert lines[0].split() == ["node", "where", "component", "version", "compiler", "build", "id", "sha256", "path"]
    assert "NCCL (torch's)" in lines[1] and "2.29.2" in lines[1] and wheel["build_id"][:12] in lines[1]
    assert builds.lines(NodeInventory("spark-b", error="no route to host").build_rows()) == [
        "spark-b  no route to host"
    ]


def test_a_watchdog_timeout_in_real_logs_whose_nccl_said_2_29_2_names_the_hang_advisories() -> None:
    """The real two-host capture's findings, as if its NCCL had printed 2.29.2 (the version the wheels'
    libraries say): the watchdog timeout names the 2.29.2 hang and the aarch64 proxy deadlock (with the
    build it applies to in its words)."""
    from sparktui.commands.common import catalogue
    from sparktui.core.analysis.advisories import attach
    from sparktui.core.pipeline import diagnose_files
    from sparktui.core.sources.open import file_sources

    from .test_advisories import MISMATCHED

    sources, _ = file_sources([str(MISMATCHED)])
    loaded = catalogue([])
    plain = [
        replace_facts(f)
        for f in diagnose_files(sources, loaded).findings
        if f.signature == "torch-nccl-watchdog-timeout"
    ]
    said = next(
        w["says"] for w in WHEELS if w["wheel"].startswith("nvidia_nccl_cu13-2.29.2-") and w["arch"] == "aarch64"
    )
    (watchdog,) = attach(plain, {"nccl_version": {"spark-a": [said.split()[-1]]}}, loaded.advisories)
    assert watchdog.facts["advisories"].split(", ") == [HANG_2292, ARM_CAS]
    assert f"(advisory {ARM_CAS}): NCCL 2.29.2+cuda13.1, printed in the logs on spark-a" in watchdog.detail
    assert "in an aarch64 build made with GCC before 10" in watchdog.detail


def replace_facts(finding: object) -> object:
    from dataclasses import replace

    return replace(finding, facts={k: v for k, v in finding.facts.items() if k != "advisories"})  # type: ignore[attr-defined]


def test_the_report_carries_the_build_table_with_hosts_anonymised(tmp_path: Path) -> None:
    from sparktui.core.analysis.diagnosis import Diagnosis
    from sparktui.core.inventory.drift import Drift
    from sparktui.core.report.export import export
    from sparktui.core.report.incident import Incident, Inventory

    wheel = next(w for w in WHEELS if w["wheel"].startswith("nvidia_nccl_cu13-2.29.2-") and w["arch"] == "aarch64")
    path = "/home/spark-b/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
    probe = from_json("container vllm_node", {"packages": {}, "nccl_library": {"path": path, **wheel}})
    table = NodeInventory("spark-b", probe=probe).build_rows() + NodeInventory("spark-a", error="refused").build_rows()
    inventory = Inventory("block", (("spark-a", "block"), ("spark-b", "block")), Drift(("spark-a", "spark-b"), ()))
    incident = Incident(Diagnosis((), (), {}), title="sparktui check", inventory=replace_builds(inventory, table))
    written = {p.name: p for p in export(incident, tmp_path / "report")}
    md = written["report.md"].read_text()
    row = f"| `spark-b` | `image` | `NCCL (torch's)` | `2.29.2` | `gcc 8.5.0` | `{wheel['build_id'][:12]}` |"
    assert "### Builds" in md and row in md and "| `spark-a` | `refused` |" in md
    assert json.loads(written["report.json"].read_text())["inventory"]["builds"][0]["version"] == "2.29.2"
    assert 'class="builds"' in written["report.html"].read_text()
    hidden = export(incident, tmp_path / "anonymised", anonymise_hosts=True, hosts=["spark-a", "spark-b"])
    md = next(p for p in hidden if p.name == "report.md").read_text()
    assert "### Builds" in md and "spark-b" not in md and wheel["build_id"][:12] in md


def replace_builds(inventory: object, table: tuple[builds.BuildRow, ...]) -> object:
    from dataclasses import replace

    return replace(inventory, builds=table)  # type: ignore[type-var]
