"""Serving health, pure: vLLM's /metrics read from real answers of the CPU server (tests/fixtures/vllm-metrics, made by
tools/capture/vllm/serving.py), the line kept per reading, tokens per second and the stall rule over the
real readings of tests/fixtures/vllm/serving-*, the metric signature kind and the source's argument."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core import catalogue as cat
from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.errors import Refused
from sparktui.core.serving import record
from sparktui.core.serving.metrics import read_vllm, samples
from sparktui.core.sources.metrics import MetricsSource, metrics_url
from sparktui.core.sources.open import Opener, UriError

from ..conftest import FIXTURES, ROOT

METRICS = ROOT / "tests" / "fixtures" / "vllm-metrics"
STALLED = FIXTURES / "vllm" / "serving-stalled" / "metrics.log"
HEALTHY = FIXTURES / "vllm" / "serving-healthy" / "metrics.log"


def value(text: str, name: str) -> float:
    """A sample's value as the text writes it (the one series of ``name``)."""
    found = [line for line in text.splitlines() if line.startswith(name + "{")]
    assert len(found) == 1, found
    return float(found[0].rsplit(" ", 1)[1])


@pytest.mark.parametrize("capture", ["idle", "running", "stalled"])
def test_a_real_answer_reads_as_the_text_says(capture: str) -> None:
    text = (METRICS / f"{capture}.txt").read_text()
    reading = read_vllm(text)
    assert reading is not None and reading.model == "tiny-qwen2"
    assert reading.running == value(text, "vllm:num_requests_running")
    assert reading.waiting == value(text, "vllm:num_requests_waiting")
    assert reading.kv_cache_usage == value(text, "vllm:kv_cache_usage_perc")
    assert reading.generation_tokens == value(text, "vllm:generation_tokens_total")
    assert reading.prompt_tokens == value(text, "vllm:prompt_tokens_total")
    assert reading.ttft_count == value(text, "vllm:time_to_first_token_seconds_count")
    assert reading.ttft_sum == value(text, "vllm:time_to_first_token_seconds_sum")
    assert reading.running == (0 if capture == "idle" else 1)


def test_labels_and_every_sample_of_a_histogram_are_read() -> None:
    found = list(samples((METRICS / "idle.txt").read_text()))
    buckets = [s for s in found if s.name == "vllm:time_to_first_token_seconds_bucket"]
    assert buckets and buckets[-1].labels == {"engine": "0", "le": "+Inf", "model_name": "tiny-qwen2"}
    assert buckets[-1].value == value((METRICS / "idle.txt").read_text(), "vllm:time_to_first_token_seconds_count")


def test_the_kv_cache_under_its_name_before_0_9_reads_the_same() -> None:
    text = (METRICS / "running.txt").read_text()
    old = text.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert "vllm:kv_cache_usage_perc" not in old
    now, before = read_vllm(text), read_vllm(old)
    assert now is not None and before is not None and before.kv_cache_usage == now.kv_cache_usage > 0


def test_an_answer_without_vllm_metrics_is_none() -> None:
    text = (METRICS / "idle.txt").read_text()
    others = "\n".join(line for line in text.splitlines() if "vllm:" not in line)
    assert "python_gc_objects_collected_total" in others
    assert read_vllm(others) is None


def test_a_reading_survives_its_line() -> None:
    reading = read_vllm((METRICS / "running.txt").read_text())
    assert reading is not None
    line = record.line("127.0.0.1:8000", reading, datetime(2026, 12, 1, 20, 51, 23, 123456))
    assert line.startswith("2026-12-01 20:51:23,123 - sparktui.metrics - INFO - vllm 127.0.0.1:8000 running=1 ")
    back = record.parse(line)
    assert back is not None and back.endpoint == "127.0.0.1:8000"
    assert back.reading.running == reading.running and back.reading.generation_tokens == reading.generation_tokens
    assert back.reading.kv_cache_usage == pytest.approx(reading.kv_cache_usage, rel=1e-3)
    unknown = record.line("h:1", replace(reading, kv_cache_usage=None), datetime(2026, 1, 1))
    assert " kv_cache=- " in unknown
    parsed = record.parse(unknown)
    assert parsed is not None and parsed.reading.kv_cache_usage is None


def test_every_captured_line_is_a_reading() -> None:
    for path in (STALLED, HEALTHY):
        lines = path.read_text().splitlines()
        assert lines and all(record.parse(line) is not None for line in lines)


def health(lines: list[str], catalogue: cat.Catalogue) -> Analyzer:
    analyzer = Analyzer(catalogue)
    analyzer.add_source("metrics.log", "cpu-node")
    analyzer.feed("metrics.log", "\n".join(lines))
    return analyzer


def test_tokens_per_second_between_the_last_two_readings(catalogue: cat.Catalogue) -> None:
    lines = HEALTHY.read_text().splitlines()
    records = [record.parse(line) for line in lines]
    i = next(i for i, r in enumerate(records) if r is not None and r.reading.generation_tokens > 0)
    before, after = records[i - 1], records[i]
    assert before is not None and after is not None
    seconds = (_time(lines[i]) - _time(lines[i - 1])).total_seconds()
    (serving,) = health(lines[: i + 1], catalogue).finish().serving
    expected = (after.reading.generation_tokens - before.reading.generation_tokens) / seconds
    assert serving.tokens_per_s == pytest.approx(expected)
    assert serving.ttft_s is not None and serving.ttft_s > 0
    assert (serving.node, serving.endpoint, serving.model, serving.running) == (
        "cpu-node",
        after.endpoint,
        "tiny-qwen2",
        0,
    )
    assert serving.short.startswith(f"{expected:.1f} tok/s · 0 running · KV 0%")
    # a counter that goes back (the server restarted) gives no rate, not a negative one
    (restarted,) = health([lines[i], lines[0]], catalogue).finish().serving
    assert restarted.tokens_per_s is None


def _time(line: str) -> datetime:
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")


def test_the_stall_fires_after_30_s_of_readings_and_names_the_endpoint(catalogue: cat.Catalogue) -> None:
    lines = STALLED.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if " running=1 " in line)
    waited = [(_time(line) - _time(lines[first])).total_seconds() for line in lines]
    short = max(i for i, w in enumerate(waited) if w < 30)
    assert not health(lines[: short + 1], catalogue).finish().findings
    (finding,) = health(lines, catalogue).finish().findings
    assert finding.signature == "vllm-serving-stalled" and finding.category == "serving_stalled"
    assert finding.first_seen.line == first + 1 and finding.nodes == ("cpu-node",)
    assert finding.facts["running"] == "1" and int(finding.facts["still_s"]) == round(waited[-1])
    assert [e.line for e in finding.evidence] == [first + 1, len(lines)]
    # a reading in which the request is gone ends it, and so does one in which tokens came again
    done = lines[-1].replace(" running=1 ", " running=0 ")
    assert not health([*lines, done], catalogue).finish().findings
    moved = lines[-1].replace(" generation_tokens=", " generation_tokens=1")
    assert not health([*lines, moved], catalogue).finish().findings


def test_an_idle_server_never_stalls(catalogue: cat.Catalogue) -> None:
    assert not health(HEALTHY.read_text().splitlines(), catalogue).finish().findings


def test_diagnose_json_carries_serving(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "--json", str(STALLED)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"][0]["signature"] == "vllm-serving-stalled"
    (serving,) = doc["serving"]
    assert serving["running"] == 1 and serving["tokens_per_s"] == 0 and serving["model"] == "tiny-qwen2"


METRIC = """id = "mine-stalled"
kind = "metric"
category = "serving_stalled"
severity = "error"
title = "Made up"
[metric]
busy = "{busy}"
still = "generation_tokens"
[explain]
what = "Made up for the loader."
why = "To break one key."
[[examples.log]]
text = "x"
fires = false
"""


def test_a_metric_signature_names_known_readings(tmp_path: Path) -> None:
    (tmp_path / "mine-stalled.toml").write_text(METRIC.format(busy="running"))
    loaded = cat.load_signature(tmp_path / "mine-stalled.toml")
    assert loaded.kind == "metric" and loaded.metric == cat.Metric("running", "generation_tokens", cat.STILL_FOR)
    (tmp_path / "mine-stalled.toml").write_text(METRIC.format(busy="queued"))
    with pytest.raises(cat.CatalogueError, match=r"metric\.busy: unknown gauge 'queued' \(one of running, waiting\)"):
        cat.load_signature(tmp_path / "mine-stalled.toml")


@pytest.mark.parametrize(
    ("arg", "url"),
    [
        ("metrics://127.0.0.1:8000", "http://127.0.0.1:8000/metrics"),
        ("http://spark-a:8000", "http://spark-a:8000/metrics"),
        ("http://spark-a:8000/metrics", "http://spark-a:8000/metrics"),
        ("http://spark-a/vllm/metrics", "http://spark-a/vllm/metrics"),
    ],
)
def test_a_metrics_argument_names_its_url(arg: str, url: str) -> None:
    assert metrics_url(arg) == url
    (source,) = Opener().open([arg])
    assert isinstance(source, MetricsSource) and source.url == url and source.name == arg
    assert source.node == url.split("//")[1].split(":")[0].split("/")[0]


@pytest.mark.parametrize("arg", ["metrics://spark-a", "metrics://spark-a:99999", "metrics://"])
def test_a_metrics_argument_without_a_port_is_refused(arg: str) -> None:
    with pytest.raises(Refused):
        metrics_url(arg)
    with pytest.raises(UriError):
        Opener().open([arg])
