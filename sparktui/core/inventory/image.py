"""The in-image probe's JSON (see :mod:`sparktui.core.inventory.image_probe`) as typed facts. Pure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sparktui.core.inventory.builds import Build, build, from_probe
from sparktui.core.inventory.facts import Flag, ImageFacts, ModelFiles, NcclLibrary, Value
from sparktui.core.inventory.parse import config_facts


def probe_facts(text: str) -> ImageFacts:
    """The facts in the probe section: a first line saying where it ran (``via container NAME``, ``via
    image REF``), then the probe's JSON; anything else (``python3: not found``, an OCI error) is the
    problem, with nothing known."""
    lines = text.splitlines()
    via = lines[0][4:] if lines and lines[0].startswith("via ") else ""
    start = next((i for i, line in enumerate(lines) if line == "{"), None)
    end = max((i for i, line in enumerate(lines) if line == "}"), default=None)
    if start is None or end is None or end < start:
        said = next((line.strip() for line in lines if line.strip() and not line.startswith("via ")), "")
        return ImageFacts(via, problem=said or "the probe printed nothing")
    try:
        found = json.loads("\n".join(lines[start : end + 1]))
    except ValueError:
        return ImageFacts(via, problem="the probe's output is not JSON")
    if not isinstance(found, dict):
        return ImageFacts(via, problem="the probe's output is not a JSON object")
    return from_json(via, found)


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _text(x: Any) -> str | None:
    return None if x is None else str(x)


def _names(x: Any) -> tuple[str, ...] | None:
    return tuple(str(v) for v in x) if isinstance(x, list) else None


def _value(x: Any) -> Value:
    if x is None or isinstance(x, str | int | float | bool):
        return x
    if isinstance(x, list):
        return tuple(str(v) for v in x)
    return str(x)


def from_json(via: str, found: Mapping[str, Any]) -> ImageFacts:
    if "error" in found and "packages" not in found:
        return ImageFacts(via, problem=f"the probe failed: {found['error']}")
    parts = _dict(found.get("parts"))
    failed = {
        name: str(p.get("status"))
        for name, p in parts.items()
        if isinstance(p, dict) and p.get("status") not in ("ok", "running")
    }
    torch = _dict(found.get("torch"))
    library = _dict(found.get("nccl_library"))
    flags = _dict(_dict(found.get("vllm_flags")).get("flags")) or None
    return ImageFacts(
        via=via,
        python=str(_dict(found.get("python")).get("version") or ""),
        packages={str(k): _text(v) for k, v in _dict(found.get("packages")).items()},
        programs={str(k): _text(v) for k, v in _dict(found.get("programs")).items()},
        env={str(k): str(v) for k, v in _dict(found.get("env")).items()},
        nccl_conf={str(k): str(v) for k, v in _dict(found.get("nccl_conf")).items()},
        shm_bytes=found["shm_bytes"] if isinstance(found.get("shm_bytes"), int) else None,
        interfaces=_names(found.get("interfaces")),
        model=_model(_dict(found.get("model"))),
        torch_cuda=_text(torch.get("cuda")),
        torch_archs=_names(torch.get("archs")),
        nccl=_text(torch.get("nccl")),
        nccl_library=(
            NcclLibrary(
                str(library["path"]),
                str(library.get("source") or ""),
                str(library.get("sha256") or ""),
                str(library.get("build_id") or ""),
            )
            if library.get("path")
            else None
        ),
        model_types=_names(_dict(found.get("transformers")).get("model_types")),
        vllm_archs=_names(_dict(found.get("vllm_archs")).get("archs")),
        vllm_flags=None if flags is None else {name: _flag(name, _dict(f)) for name, f in flags.items()},
        executor_default=_value(_dict(found.get("vllm_flags")).get("executor_default")),
        seconds=float(found.get("seconds") or 0.0),
        timed_out=tuple(str(t) for t in found.get("timed_out") or ()),
        failed=failed,
        builds=_builds(torch, library, _dict(found.get("builds"))),
    )


def _builds(torch: Mapping[str, Any], library: Mapping[str, Any], found: Mapping[str, Any]) -> tuple[Build, ...]:
    """torch's NCCL (the library it loaded, or would; with the version torch reports where the file says
    none), then the rest."""
    rest = from_probe("image", found)
    if not library.get("path"):
        return rest
    said = library if library.get("says") else {"version": torch.get("nccl"), **library}
    return (build("image", "nccl", said), *rest)


def _flag(name: str, f: Mapping[str, Any]) -> Flag:
    return Flag(
        name,
        str(f.get("dest") or ""),
        _value(f.get("default")),
        bool(f.get("takes_value", True)),
        tuple(str(c) for c in f.get("choices") or ()),
    )


def _model(m: Mapping[str, Any]) -> ModelFiles | None:
    path = m.get("path")
    if not path:
        return None
    files = tuple(str(f) for f in m.get("files") or ())
    if not m.get("exists"):
        return ModelFiles(str(path), False, problem="no such folder")
    if "config" not in m:
        return ModelFiles(str(path), False, files, problem=str(m.get("config_error") or "no config.json"))
    config = dict(_dict(m.get("config")))
    facts = config_facts(str(path), files, config)
    quantization = config.get("quantization")
    return replace(facts, quantization=str(quantization)) if quantization else facts
