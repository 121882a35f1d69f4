"""Failures no signature names: the fallback signature, its families, what it leaves out (the explain-away rules
E1-E3 of ``explain``, each said by the finding that explains) and how it ranks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.events import Finding

ROOT = Path(__file__).resolve().parents[2]
EXCEPTION = ROOT / "tests" / "fixtures" / "nccl4" / "four-hosts-rank-exception"
CATALOGUE = cat.load()

# gRPC's core refusing the raylet's port, as it printed it inside Ray 2.60's raylet (the first line of
# raylet.err in the real capture tests/fixtures/ray/raylet-port-taken); no signature names gRPC's own words
GRPC_PORT = (
    (ROOT / "tests/fixtures/ray/raylet-port-taken/head-session/raylet.err").read_text(encoding="utf-8").splitlines()[0]
)
# vLLM's own lines, from the real capture tests/fixtures/vllm/healthy/server.log
SHUTDOWN = "(APIServer pid=25297) INFO 11-30 04:47:58 [launcher.py:254] [shutdown] API server: shutdown triggered"
AFTER_SHUTDOWN = "(APIServer pid=25297) ERROR 11-30 04:47:58 [async_llm.py:906] AsyncLLM output_handler failed."


def diagnose(*logs: tuple[str, str]) -> Diagnosis:
    analyzer = Analyzer(CATALOGUE)
    for node, text in logs:
        analyzer.add_source(f"{node}.log", node)
        analyzer.feed(f"{node}.log", text)
    return analyzer.finish()


def test_a_failure_no_signature_names_is_an_error_with_its_frame() -> None:
    rank2 = (EXCEPTION / "rank2.log").read_text(encoding="utf-8")
    found = diagnose(("node-c", rank2)).findings
    first = found[0]
    assert (first.signature, first.category, first.severity.label) == ("unrecognised-failure", "engine_crash", "error")
    assert first.facts["exception"] == "RuntimeError"
    assert first.facts["frame"].endswith("scenario.py:266 in fail")
    assert "raised in" in first.detail and "simulated worker failure on rank 2" in first.detail


def test_the_exception_ranks_before_the_timeouts_it_caused() -> None:
    logs = [(p.stem, p.read_text(encoding="utf-8")) for p in sorted(EXCEPTION.glob("rank*.log"))]
    found = diagnose(*logs).findings
    assert found[0].signature == "unrecognised-failure"
    assert "torch-nccl-watchdog-timeout" in [f.signature for f in found[1:]]
    assert "torch-nccl-watchdog-timeout" in next(b.names for b in found[0].because if b.rule == "T1")


def test_a_family_files_it_by_its_words() -> None:
    first = diagnose(("head", GRPC_PORT)).findings[0]
    assert (first.signature, first.category) == ("unrecognised-failure-port-in-use", "port_in_use")
    assert first.remediations == ("free-port",)


def test_a_message_wrapped_over_lines_is_filed_by_all_of_it() -> None:
    """A logger that wraps at the terminal's width (Rich's) leaves the words that file the failure on the
    lines below it: vLLM's placement-group message, wrapped as Rich wraps it at 40 columns."""
    wrapped = (
        "[10/21/24 06:53:04] ERROR    Step load failed: The number of required\n"
        "GPUs exceeds the total number of\n"
        "available GPUs in the placement group.\n"
        "\n"
        "INFO 10-21 06:53:05 [loader.py:88] address already in use is not this failure's"
    )
    first = diagnose(("node", wrapped)).findings[0]
    assert (first.signature, first.category) == ("unrecognised-failure-parallel-layout", "missing_ray_backend")


def test_a_signature_of_the_same_category_on_the_node_says_it_better() -> None:
    uvicorn = "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use"
    found = diagnose(("head", f"{uvicorn}\n{GRPC_PORT}")).findings
    assert [f.signature for f in found] == ["server-port-in-use"]
    assert _explained(found[0]) == [("E1", ("unrecognised-failure-port-in-use",))]
    elsewhere = diagnose(("head", uvicorn), ("worker", GRPC_PORT)).findings
    assert {f.signature for f in elsewhere} == {"server-port-in-use", "unrecognised-failure-port-in-use"}


def test_on_a_log_that_names_no_node_its_own_signature_says_it_better() -> None:
    """A log whose first lines read as notes names no node (the real capture tests/fixtures/cuda/device-assert
    starts with the GPU's assertion lines): the source stands for it, so the named finding still explains the
    fallback's on the same log, and not one on another log."""
    log = (ROOT / "tests/fixtures/cuda/device-assert/run.log").read_text(encoding="utf-8")
    analyzer = Analyzer(CATALOGUE)
    analyzer.add_source("run.log", "")
    analyzer.feed("run.log", log)
    found = analyzer.finish().findings
    assert [(f.signature, f.nodes) for f in found] == [("cuda-device-side-assert", ())]
    cuda_line = next(line for line in log.splitlines() if "cudaErrorAssert" in line)
    analyzer = Analyzer(CATALOGUE)
    for name, text in (("run.log", log.replace(cuda_line, "")), ("other.log", cuda_line)):
        analyzer.add_source(name, "")
        analyzer.feed(name, text)
    assert [f.signature for f in analyzer.finish().findings] == ["cuda-device-side-assert", "unrecognised-failure"]


def test_an_exit_status_only_reports_the_exception_its_process_printed_before() -> None:
    """torchrun's `failed (exitcode: 1)` after the rank's own ValueError, which no signature names (the real
    capture tests/fixtures/torchrun/rank-raises-restarts): the exception is the finding, not the exit status."""
    log = (ROOT / "tests/fixtures/torchrun/rank-raises-restarts/torchrun.log").read_text(encoding="utf-8")
    found = diagnose(("node", log)).findings
    assert found[0].facts["exception"] == "ValueError"
    assert not [f for f in found if f.facts.get("exit") == "1"]
    assert _explained(found[0]) == [("E3", ("unrecognised-failure-process-died",))]
    # torchrun stopping the healthy rank (exitcode -15, SIGTERM) once rank 1 was killed
    killed = (ROOT / "tests/fixtures/torchrun/rank-host-oom/torchrun.log").read_text(encoding="utf-8")
    found = diagnose(("node", killed)).findings
    assert found[0].signature == "process-killed-sigkill"
    assert not [f for f in found if f.facts.get("exit") == "-15"]
    # (the healthy rank's lost peer, printed before torchrun stopped it, is what that exit status reports)
    lost = next(f for f in found if f.signature == "gloo-peer-connection-lost")
    assert _explained(lost) == [("E3", ("unrecognised-failure-process-died",))]


def test_the_causes_in_a_chain_of_exceptions_go_with_the_named_one_it_ends_in() -> None:
    """`ray job submit` to an address where nothing answers (the real capture
    tests/fixtures/ray/job-submit-wrong-address): urllib3's and requests' refused connections, chained by
    Python to Ray's own ConnectionError, which a signature names, are not findings of their own."""
    log = (ROOT / "tests/fixtures/ray/job-submit-wrong-address/job-submit.log").read_text(encoding="utf-8")
    found = diagnose(("head", log)).findings
    assert [f.signature for f in found] == ["ray-dashboard-unreachable"]
    assert _explained(found[0]) == [("E2", ("unrecognised-failure-network",))]


def _explained(f: Finding) -> list[tuple[str, tuple[str, ...]]]:
    """The explain-away rules a finding says it applied, with the findings it explained."""
    return [(b.rule, b.names) for b in f.because if b.rule.startswith("E")]


def test_what_fails_after_an_orderly_shutdown_stays_quiet() -> None:
    assert not diagnose(("node", f"{SHUTDOWN}\n{AFTER_SHUTDOWN}")).findings
    assert diagnose(("node", f"{AFTER_SHUTDOWN}\n{SHUTDOWN}")).findings


def test_diagnose_exits_1_on_it(tmp_path: Path) -> None:
    log = tmp_path / "raylet.out"
    log.write_text(GRPC_PORT + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--quiet", str(log)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 1, done.stderr
    assert "A process could not bind an address already in use" in done.stdout


def _ended(node: str, text: str) -> Diagnosis:
    """The diagnosis of one log read to its end (as ``diagnose`` reads a file)."""
    analyzer = Analyzer(CATALOGUE)
    analyzer.add_source(f"{node}.log", node)
    analyzer.feed(f"{node}.log", text)
    analyzer.end(f"{node}.log")
    return analyzer.finish()


def test_a_log_that_ends_inside_a_traceback_says_so() -> None:
    """A paste cut short, or a process killed while printing: the real capture's rank-2 log up to its raising
    frame and the code under it, without the exception line."""
    lines = (EXCEPTION / "rank2.log").read_text(encoding="utf-8").splitlines()
    cut = lines[: next(i for i, line in enumerate(lines) if "raise RuntimeError(" in line) + 1]
    first = _ended("node-c", "\n".join(cut)).findings[0]
    # (only the end of the log speaks for it: a warning)
    assert (first.signature, first.category, first.severity.label) == (
        "unrecognised-failure",
        "engine_crash",
        "warning",
    )
    assert first.facts["cut"].endswith("scenario.py:266 in fail")
    assert "the log ends inside it" in first.detail and "not in the log" in first.detail
    assert first.evidence[0].line == len(cut) - 1 and first.evidence[0].after == ("[rank2]:     raise RuntimeError(",)
    # the same lines with the source still open (a live one), or going on past the frames, say nothing of it
    assert not diagnose(("node-c", "\n".join(cut))).findings
    assert not _ended("node-c", "\n".join([*cut, "[rank2]: some later line"])).findings
    # the whole log: its exception line is the failure, as before
    assert "cut" not in _ended("node-c", "\n".join(lines)).findings[0].facts


def test_a_traceback_a_calm_level_printed_is_no_failure_where_it_is_cut() -> None:
    """vLLM's logger prints a traceback with its prefix on every line (the real capture's engine core at
    ERROR, cut after its second frame's carets): cut there it is a failure; the same lines at WARNING (a
    handled exception a program only reports) fail nothing."""
    log = (ROOT / "tests/fixtures/vllm/pipeline-parallel-2-without-ray/server.log").read_text(encoding="utf-8")
    lines = log.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("Traceback (most recent call last):"))
    cut = "\n".join(lines[start : start + 7])
    assert _ended("head", cut).findings[0].facts["cut"].endswith("vllm/tracing/otel.py:175 in sync_wrapper")
    assert not _ended("head", cut.replace(" ERROR ", " WARNING ")).findings


def test_a_cut_traceback_whose_frame_a_signature_names_is_that_signatures_alone() -> None:
    """vLLM's Ray set-up raising, cut at its frame (vllm-ray-cluster-init-raised's own example): the signature
    names the frame, so the fallback adds nothing."""
    sig = next(s for s in CATALOGUE.signatures if s.id == "vllm-ray-cluster-init-raised")
    log = next(e.text for e in sig.log_examples if e.fires)
    assert [f.signature for f in _ended("head", log.strip("\n")).findings] == ["vllm-ray-cluster-init-raised"]


def test_diagnose_of_a_file_cut_inside_a_traceback_warns(tmp_path: Path) -> None:
    """The real capture's rank-2 log cut after its raising frame, as a user would paste it into a file."""
    lines = (EXCEPTION / "rank2.log").read_text(encoding="utf-8").splitlines()
    log = tmp_path / "pasted.log"
    log.write_text("\n".join(lines[: next(i for i, x in enumerate(lines) if "raise RuntimeError(" in x) + 1]) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "sparktui", "diagnose", "--json", str(log)], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr  # a warning: the exception is not in the log
    (first,) = json.loads(done.stdout)["findings"]
    assert first["severity"] == "warning" and first["facts"]["cut"].endswith("scenario.py:266 in fail")


def test_a_cut_traceback_beside_a_printed_failure_tells_the_printed_one() -> None:
    """Two ranks' logs: one with the whole traceback, one cut inside it. Their fallback hits are one finding,
    an error: it quotes the failure that was printed, not the cut."""
    lines = (EXCEPTION / "rank2.log").read_text(encoding="utf-8").splitlines()
    cut = lines[: next(i for i, line in enumerate(lines) if "raise RuntimeError(" in line) + 1]
    analyzer = Analyzer(CATALOGUE)
    for node, text in (("node-c", "\n".join(lines)), ("node-d", "\n".join(cut))):
        analyzer.add_source(f"{node}.log", node)
        analyzer.feed(f"{node}.log", text)
        analyzer.end(f"{node}.log")
    (first,) = [f for f in analyzer.finish().findings if f.signature == "unrecognised-failure"]
    assert first.severity.label == "error" and "cut" not in first.facts
    assert "simulated worker failure on rank 2" in first.detail and "raised in" in first.detail
