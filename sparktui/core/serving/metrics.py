"""vLLM's ``/metrics`` (Prometheus' text format) read into the few numbers that say whether it serves.

The V1 engine's names (``vllm/v1/metrics/loggers.py``): the scheduler's gauges ``vllm:num_requests_running``
and ``vllm:num_requests_waiting``; the KV cache's share in use, ``vllm:kv_cache_usage_perc`` (0 to 1; called
``vllm:gpu_cache_usage_perc`` before 0.9, and both are read); the counters ``vllm:prompt_tokens_total`` and
``vllm:generation_tokens_total``; and the histogram ``vllm:time_to_first_token_seconds``. There is no
throughput gauge: tokens per second exist only as the difference of two readings of a counter. With several
engines (data parallelism) each has its own ``engine`` label: requests and tokens are added up, the KV cache
is the fullest engine's.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import regex

_SAMPLE = regex.compile(r"(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+-?\d+)?\s*$")
_LABEL = regex.compile(r'\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*"(?P<value>(?:[^"\\]|\\.)*)"\s*,?')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")  # the name since 0.9, and before
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
TTFT = "vllm:time_to_first_token_seconds"


@dataclass(frozen=True, slots=True)
class Sample:
    """One line of the exposition: a metric's name, its labels and its value."""

    name: str
    labels: dict[str, str]
    value: float


def samples(text: str) -> Iterator[Sample]:
    """Every sample in Prometheus' text format; comments (``# HELP``, ``# TYPE``) and lines that are not
    samples are skipped."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if m is None:
            continue
        try:
            value = float(m.group("value"))
        except ValueError:
            continue
        labels = {}
        for lm in _LABEL.finditer(m.group("labels") or ""):
            labels[lm.group("key")] = regex.sub(r"\\[\\\"n]", lambda e: _ESCAPES[e.group()], lm.group("value"))
        yield Sample(m.group("name"), labels, value)


@dataclass(frozen=True, slots=True)
class Reading:
    """What one scrape of a vLLM server says. ``kv_cache_usage`` is a share (0 to 1), None where the server
    gives neither name; ``ttft_count`` and ``ttft_sum`` are the time-to-first-token histogram's count and
    sum of seconds so far (their differences between two readings give the mean of the requests between)."""

    model: str
    running: float
    waiting: float
    kv_cache_usage: float | None
    prompt_tokens: float
    generation_tokens: float
    ttft_count: float
    ttft_sum: float


#: The fields of a :class:`Reading` that a metric signature may name: gauges go up and down, counters only up
#: (until the server restarts).
GAUGES = ("running", "waiting")
COUNTERS = ("prompt_tokens", "generation_tokens", "ttft_count")


def read_vllm(text: str) -> Reading | None:
    """The reading in a ``/metrics`` answer, or None when it holds no vLLM engine's metrics (another server,
    or a vLLM started with its metrics off)."""
    sums: dict[str, float] = {}
    kv: float | None = None
    models: list[str] = []
    for s in samples(text):
        if not s.name.startswith("vllm:") or math.isnan(s.value):
            continue
        if s.name in KV_USAGE:
            kv = s.value if kv is None else max(kv, s.value)
        else:
            sums[s.name] = sums.get(s.name, 0.0) + s.value
        model = s.labels.get("model_name")
        if model and model not in models:
            models.append(model)
    if RUNNING not in sums and GENERATION_TOKENS not in sums:
        return None
    return Reading(
        ",".join(models),
        sums.get(RUNNING, 0.0),
        sums.get(WAITING, 0.0),
        kv,
        sums.get(PROMPT_TOKENS, 0.0),
        sums.get(GENERATION_TOKENS, 0.0),
        sums.get(f"{TTFT}_count", 0.0),
        sums.get(f"{TTFT}_sum", 0.0),
    )
