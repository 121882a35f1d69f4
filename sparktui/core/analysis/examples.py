"""Checking a signature against its own examples: what ``sparktui catalogue test``, the generated tests and
the loading of the user's signature folders run. Each problem is one line naming the signature file and the
example. Every search has the matcher's time budget: a pattern that backtracks without bound on an example is
a problem, not a hang."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import regex

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.matcher import budget
from sparktui.core.analysis.scan import family_words, filed
from sparktui.core.catalogue import Catalogue, Example, Signature, Track
from sparktui.core.classify import classify, format_of, peeled_by
from sparktui.core.formats import Format, Prefix
from sparktui.core.search.engines import Engine, LiteralEngine, best_engine
from sparktui.core.search.literals import required_literals
from sparktui.core.taxonomy import CATEGORIES

EngineFactory = Callable[[Sequence[str]], Engine]
ENGINES: tuple[EngineFactory, ...] = (LiteralEngine, best_engine)


class _TooSlow(Exception):
    """A pattern ran out of its time budget on an example line."""

    def __init__(self, pattern: str, seconds: float) -> None:
        super().__init__(
            f"the pattern {pattern!r} took over {seconds:.2f} s of CPU on this line (it backtracks without bound)"
        )


def check(sig: Signature, catalogue: Catalogue) -> list[str]:
    """Every way ``sig`` disagrees with its examples or the catalogue rules; empty when all is well."""
    problems = [f"{sig.path}: {p}" for p in _shape(sig, catalogue)]
    where = ""
    try:
        for i, ex in enumerate(sig.match_examples):
            where = f"examples.match[{i}]"
            why = _line_verdict(sig, ex.text, ex.facts)
            if why:
                problems.append(f"{sig.path}: {where}: {why}")
        for i, ex in enumerate(sig.no_match_examples):
            where = f"examples.no_match[{i}]"
            if _hits(sig, ex.text) is not None:
                problems.append(f"{sig.path}: {where}: matched, but must not")
    except _TooSlow as slow:  # the engines would only run out of time on it too
        return [*problems, f"{sig.path}: {where}: {slow}"]
    problems += [f"{sig.path}: {p}" for p in _family_problems(sig)]
    families = tuple(s for s in catalogue.signatures if s.family_of == sig.id)
    single = Catalogue((sig, *families), catalogue.tracks)
    ids = {sig.id, *(s.id for s in families)}  # a fallback signature's hits are filed under its families
    for engine in ENGINES:
        for i, ex in enumerate(sig.log_examples):
            fired = _fires(single, ids, ex, engine)
            if fired != ex.fires:
                verb = "did not fire" if ex.fires else "fired"
                problems.append(f"{sig.path}: examples.log[{i}]: {verb} with the {_name(engine)} engine")
        if sig.context is None and sig.stall is None:
            for i, ex in enumerate(sig.match_examples):
                if not _fires(single, ids, ex, engine):
                    problems.append(f"{sig.path}: examples.match[{i}]: no finding through the {_name(engine)} engine")
    return problems


def check_track(track: Track) -> list[str]:
    """Every way a stage track disagrees with its examples: each line must be of one of the track's
    programs and mark exactly the stage it names (none, for an example of no stage) with the facts it names;
    every stage with patterns needs an example (one without is only reached through another's ``once_done``)."""
    problems = []
    for i, ex in enumerate(track.examples):
        where = f"{track.path}: examples[{i}]"
        program = classify(ex.text).program
        if program not in track.programs:
            problems.append(f"{where}: the line is classified as {program!r}, not one of {sorted(track.programs)}")
            continue
        try:
            marks = [(s.id, m) for s in track.stages for p in s.any if (m := _search(p, ex.text)) is not None]
        except _TooSlow as slow:
            problems.append(f"{where}: {slow}")
            continue
        stages = list(dict.fromkeys(stage for stage, _ in marks))
        if stages != ([ex.stage] if ex.stage else []):
            problems.append(f"{where}: marks {stages or 'no stage'}, expected {ex.stage or 'no stage'}")
            continue
        got = {k: v for _, m in marks for k, v in m.groupdict().items() if v is not None}
        for key, want in ex.facts.items():
            if got.get(key) != want:
                problems.append(f"{where}: fact {key!r} is {got.get(key)!r}, expected {want!r}")
    shown = {ex.stage for ex in track.examples}
    problems += [f"{track.path}: stage {s.id!r} has no example" for s in track.stages if s.any and s.id not in shown]
    return problems


def check_prefix(prefix: Prefix) -> list[str]:
    """Every way a prefix (``diagnostics/formats/prefixes.toml``) disagrees with its examples: each line, its
    prefixes peeled, must be classified as the program, node, rank and repeat count the example says; and
    the prefix itself must match the line (a prefix whose example another prefix takes proves nothing)."""
    problems = []
    if not prefix.examples:
        problems.append(f"prefixes.toml: {prefix.id}: needs at least one example")
    for i, ex in enumerate(prefix.examples):
        where = f"prefixes.toml: {prefix.id}: examples[{i}]"
        line = ex["line"]
        if not any(p.id == prefix.id for p in peeled_by(line)):
            problems.append(f"{where}: the prefix is not peeled from the line")
        got = classify(line)
        seen = {"program": got.program, "node": got.node, "rank": got.rank, "repeated": got.repeated}
        for key in ("program", "node", "rank", "repeated"):
            if key in ex and str(seen[key]) != ex[key]:
                problems.append(f"{where}: {key} is {seen[key]!r}, expected {ex[key]!r}")
    return problems


def check_format(fmt: Format) -> list[str]:
    """Every way a program format (``diagnostics/formats/programs.toml``) disagrees with its examples: each
    line must be classified as the example says (program, layer, level, node, rank, the logger's file), and by
    this format, not one tried before it."""
    problems = []
    if not fmt.examples:
        problems.append(f"programs.toml: {fmt.id}: needs at least one example")
    for i, ex in enumerate(fmt.examples):
        where = f"programs.toml: {fmt.id}: examples[{i}]"
        line = ex["line"]
        other = format_of(line)
        if other is not fmt:
            problems.append(f"{where}: classified by {other.id if other else 'no format'}, not by this one")
        got = classify(line)
        seen = {
            "program": got.program,
            "layer": got.layer,
            "level": got.level,
            "node": got.node,
            "rank": got.rank,
            "file": got.file,
        }
        for key in seen:
            if key in ex and str(seen[key]) != ex[key]:
                problems.append(f"{where}: {key} is {seen[key]!r}, expected {ex[key]!r}")
    return problems


def filed_under(sig: Signature, line: str) -> str:
    """The family of a fallback signature a line of it is filed under ("" for none), as the scan files it."""
    seconds = budget(line)
    try:
        return filed([(f.name, family_words(f.words)) for f in sig.families], line, "", timeout=seconds)
    except TimeoutError:
        raise _TooSlow("a word of the families", seconds) from None


def _family_problems(sig: Signature) -> list[str]:
    """Each family's examples must be hits of the signature filed under it; its counter-examples not under it."""
    problems = []
    for i, family in enumerate(sig.families):
        for j, line in enumerate(family.examples):
            where = f"families[{i}].examples[{j}]"
            if _hits(sig, line) is None:
                problems.append(f"{where}: not a hit of the signature")
            elif (got := filed_under(sig, line)) != family.name:
                problems.append(f"{where}: filed under {got or 'no family'!r}, not {family.name!r}")
        for j, line in enumerate(family.counter_examples):
            if filed_under(sig, line) == family.name:
                problems.append(f"families[{i}].counter_examples[{j}]: filed under {family.name!r}")
    return problems


def _shape(sig: Signature, catalogue: Catalogue) -> list[str]:
    problems = []
    for i, pattern in enumerate(sig.any):
        if required_literals(pattern) is None:
            problems.append(f"match.any[{i}]: no plain literal of 4+ characters that every match contains")
    known = {s.id for s in catalogue.signatures}
    for ref in sig.consequence_of:
        if ref not in CATEGORIES and ref not in known:
            problems.append(f"consequence_of: {ref!r} is neither a category nor a signature id")
    if sig.stall is not None and not sig.log_examples:
        problems.append("examples.log: a stall signature needs at least one log example")
    return problems


def _hits(sig: Signature, line: str) -> dict[str, str] | None:
    """The facts if ``line`` alone is a hit of ``sig``, else None."""
    if sig.programs and classify(line).program not in sig.programs:
        return None
    if any(_search(p, line) for p in sig.none):
        return None
    for pattern in sig.any:
        m = _search(pattern, line)
        if m is not None:
            return {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def _search(pattern: str, line: str) -> regex.Match[str] | None:
    """``regex.search`` within the matcher's time budget for the line; :class:`_TooSlow` past it."""
    seconds = budget(line)
    try:
        return regex.search(pattern, line, timeout=seconds)
    except TimeoutError:
        raise _TooSlow(pattern, seconds) from None


def _line_verdict(sig: Signature, line: str, facts: dict[str, str] | object) -> str:
    if sig.programs:
        program = classify(line).program
        if program not in sig.programs:
            return f"the line is classified as {program!r}, not one of {sorted(sig.programs)}"
    got = _hits(sig, line)
    if got is None:
        return "did not match"
    assert isinstance(facts, dict)
    for key, want in facts.items():
        if got.get(key) != want:
            return f"fact {key!r} is {got.get(key)!r}, expected {want!r}"
    return ""


def _fires(catalogue: Catalogue, ids: set[str], example: Example, engine: EngineFactory) -> bool:
    """Whether a signature of ``ids`` is found in the example's log, each node's lines a source of that node."""
    analyzer = Analyzer(catalogue, engine)
    for node, text in example.nodes or (("example", example.text),):
        analyzer.add_source(f"{node}.log", node)
        analyzer.feed(f"{node}.log", text.strip("\n"))
        analyzer.end(f"{node}.log")  # an example is a whole log, read to its end
    return any(f.signature in ids for f in analyzer.finish().findings)


def _name(engine: EngineFactory) -> str:
    return "literal" if engine is LiteralEngine else "default"
