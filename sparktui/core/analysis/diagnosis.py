"""The result of an analysis and its JSON form (the ``sparktui diagnose --json`` contract)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktui.core.analysis.progress import Grid
from sparktui.core.analysis.serving import Serving
from sparktui.core.events import Finding, Severity, SourceSummary, finding_dict

JSON_VERSION = 1


@dataclass(frozen=True, slots=True)
class Pending:
    """A stall a live session would name if nothing moved for ``window`` seconds: ``who`` has stopped at
    ``stage`` of ``track`` for ``waited`` of them."""

    signature: str
    title: str
    track: str
    node: str
    who: str
    stage: str
    waited: float
    window: float

    @property
    def short(self) -> str:
        """The few words a stage strip has room for."""
        return f"stall pending ({self.waited:.0f} s of {self.window:.0f})"

    @property
    def sentence(self) -> str:
        return (
            f"{self.short}: {self.who} has stopped at '{self.stage}'; at {self.window:.0f} s without progress "
            f"this is named '{self.title}' (follow for longer to see it)"
        )


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """What an analysis found: the sources read, the findings ranked with the most likely root cause first,
    how far start-up got per node and track, and per track the rank-by-stage grid; and, one line each, what
    the analysis could not use: the user's signature files left out on load, patterns disabled during it;
    and, for live sources, the stalls pending (units stopped at a stage for less than its stall window);
    and how each server read by a metrics source serves."""

    sources: tuple[SourceSummary, ...]
    findings: tuple[Finding, ...]
    stages: dict[str, dict[str, str]]
    progress: tuple[Grid, ...] = ()
    warnings: tuple[str, ...] = ()
    pending: tuple[Pending, ...] = ()
    serving: tuple[Serving, ...] = ()

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": JSON_VERSION,
            "sources": [_source(s) for s in self.sources],
            "findings": [finding_dict(i, f) for i, f in enumerate(self.findings, 1)],
            "stages": self.stages,
            "progress": [_grid(g) for g in self.progress],
            "warnings": list(self.warnings),
            "pending": [_pending(p) for p in self.pending],
            "serving": [_serving(s) for s in self.serving],
        }


def _serving(s: Serving) -> dict[str, Any]:
    return {
        "node": s.node,
        "endpoint": s.endpoint,
        "model": s.model,
        "running": s.running,
        "waiting": s.waiting,
        "kv_cache_usage": s.kv_cache_usage,
        "tokens_per_s": None if s.tokens_per_s is None else round(s.tokens_per_s, 2),
        "ttft_s": None if s.ttft_s is None else round(s.ttft_s, 4),
    }


def _pending(p: Pending) -> dict[str, Any]:
    return {
        "signature": p.signature,
        "title": p.title,
        "track": p.track,
        "node": p.node,
        "who": p.who,
        "stage": p.stage,
        "waited_s": round(p.waited, 1),
        "window_s": p.window,
    }


def _source(s: SourceSummary) -> dict[str, Any]:
    out: dict[str, Any] = {"name": s.name, "node": s.node, "lines": s.lines}
    if s.error:
        out["error"] = s.error
    if s.hosts:
        out["hosts"] = list(s.hosts)
    if s.notes:
        out["notes"] = list(s.notes)
    return out


def _grid(g: Grid) -> dict[str, Any]:
    return {
        "track": g.track,
        "columns": list(g.columns),
        "rows": [
            {
                "node": r.node,
                "who": r.who,
                "behind": r.behind,
                "cells": [{"stage": c.stage, "done": c.done, "behind": c.behind} for c in r.cells],
            }
            for r in g.rows
        ],
        "verdict": g.verdict,
    }
