"""The line sparktui writes for each reading of a server's ``/metrics``, and reading it back.

A reading becomes a log line like any other, so that it goes through the one pipeline: it is shown in the
node's column, kept in the spool, replayed and diagnosed again later, and the stall rule judges it on the
time it carries, live or read after the fact. It is in Python's logging format, which the classifier knows
(its time, its level), and names the endpoint it was read from::

    2026-12-01 20:51:23,123 - sparktui.metrics - INFO - vllm 127.0.0.1:8000 running=1 waiting=0
    kv_cache=0.0061% prompt_tokens=6 generation_tokens=38 ttft_count=2 ttft_sum=0.0855 model=Qwen/Qwen3-8B

(one line). ``kv_cache=-`` where the server says nothing of its KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import regex

from sparktui.core.serving.metrics import Reading

#: The logger name every such line carries: what a scan looks for before it parses anything.
TAG = "sparktui.metrics"
_LINE = regex.compile(
    r" - sparktui\.metrics - INFO - vllm (?P<endpoint>\S+) running=(?P<running>[\d.]+) waiting=(?P<waiting>[\d.]+)"
    r" kv_cache=(?:(?P<kv>[\d.e+-]+)%|-) prompt_tokens=(?P<prompt>[\d.e+]+) generation_tokens=(?P<generation>[\d.e+]+)"
    r" ttft_count=(?P<ttft_count>[\d.e+]+) ttft_sum=(?P<ttft_sum>[\d.e+-]+) model=(?P<model>.*)$"
)


@dataclass(frozen=True, slots=True)
class Record:
    """A reading as a line says it, and where it was read."""

    endpoint: str
    reading: Reading


def _number(value: float) -> str:
    """A count as a whole number, anything else in few digits."""
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else f"{value:.6g}"


def line(endpoint: str, reading: Reading, when: datetime) -> str:
    """The line for ``reading`` of ``endpoint`` (``host:port``) taken at ``when`` (local time)."""
    kv = "-" if reading.kv_cache_usage is None else f"{reading.kv_cache_usage * 100:.4g}%"
    return (
        f"{when:%Y-%m-%d %H:%M:%S},{when.microsecond // 1000:03d} - {TAG} - INFO - vllm {endpoint}"
        f" running={_number(reading.running)} waiting={_number(reading.waiting)} kv_cache={kv}"
        f" prompt_tokens={_number(reading.prompt_tokens)} generation_tokens={_number(reading.generation_tokens)}"
        f" ttft_count={_number(reading.ttft_count)} ttft_sum={reading.ttft_sum:.6g} model={reading.model}"
    )


def parse(text: str) -> Record | None:
    """The record a line holds, or None for any other line."""
    m = _LINE.search(text)
    if m is None:
        return None
    kv = m.group("kv")
    reading = Reading(
        m.group("model"),
        float(m.group("running")),
        float(m.group("waiting")),
        None if kv is None else float(kv) / 100,
        float(m.group("prompt")),
        float(m.group("generation")),
        float(m.group("ttft_count")),
        float(m.group("ttft_sum")),
    )
    return Record(m.group("endpoint"), reading)
