"""The launch tables' own examples (``diagnostics/launch/*.toml``), run through the readers they configure: a
command must read as its example says (``vllm.toml``, ``sglang.toml``), an SGLang launch must translate to
the vLLM one given, dropping the flags listed (``sglang-to-vllm.toml``). ``catalogue test`` and the tests
run them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sparktui.core.errors import Invalid
from sparktui.core.launch import tables
from sparktui.core.launch.serve import parse_launch
from sparktui.core.launch.sglang_to_vllm import sglang_to_vllm

#: The tables with examples, by file name.
NAMES = ("vllm", "sglang", "sglang-to-vllm")


def check(name: str) -> list[str]:
    """Every way the examples of ``diagnostics/launch/NAME.toml`` disagree with the readers."""
    doc = tables.read(name)
    problems = []
    for i, example in enumerate(doc.tables("examples")):
        where = f"{name}.toml: examples[{i}]"
        try:
            found = _translated(example.data) if name == "sglang-to-vllm" else _read(name, example.data)
            problems += [f"{where}: {p}" for p in found]
        except Invalid as exc:
            problems.append(f"{where}: refused: {exc}")
        except KeyError as exc:
            problems.append(f"{where}: needs the key {exc.args[0]!r}")
    return problems


def _read(engine: str, example: Mapping[str, Any]) -> list[str]:
    launch = parse_launch(example["command"])
    problems = [] if launch.engine == engine else [f"read as {launch.engine}, not {engine}"]
    for field, value in example["read"].items():
        got = getattr(launch, field)
        got = [list(pair) for pair in got] if field == "env" else list(got) if field == "flags" else got
        if got != value:
            problems.append(f"{field} is {got!r}, expected {value!r}")
    return problems


def _translated(example: Mapping[str, Any]) -> list[str]:
    t = sglang_to_vllm(example["sglang"], mode=example["mode"])
    problems = [] if t.launch == example["vllm"] else [f"translates to {t.launch!r}, expected {example['vllm']!r}"]
    dropped = [d.flag for d in t.dropped]
    if dropped != example["dropped"]:
        problems.append(f"drops {dropped}, expected {example['dropped']}")
    return problems
