"""Where a failure line came from, and the family that origin files it under.

A failure line that no signature names still says, or sits under, where it was raised: the logger's file
(vLLM's ``[weight_utils.py:427]``, kept by :class:`~sparktui.core.classify.Classification`), the frame of the
traceback above it that raised it (``File ".../vllm/model_executor/model_loader/weight_utils.py", line
427``, as the fallback signature's ``traceback.frame`` reads it) and the exception's class
(``huggingface_hub.errors.GatedRepoError``). :class:`Provenance` holds them for one line. Two tables of
``diagnostics/origins/`` turn them into a family of the fallback signature:

* ``areas.toml``: a module path's prefix (a package, or one file) → a family; a row may also name the
  file names a logger prints that only that prefix holds in the release it cites;
* ``exceptions.toml``: a domain exception class (and the classes the release derives from it) → a family.

:class:`Origins` looks a provenance up in them, in this order: the raising frame, then the logger's file
(``areas.toml``), then the place the program raises the line's message at, where one of its failure-level
templates reads it (``templates.tsv``, :mod:`~sparktui.core.analysis.templates`: for a line that names no file,
as an exception printed with no traceback above it or SGLang's logger), then the exception class. What none
of them files is left to the family words (:func:`~sparktui.core.analysis.scan.filed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import regex

from sparktui.core import tomlfile
from sparktui.core.analysis.templates import Placed, Template
from sparktui.core.analysis.templates import load as load_templates
from sparktui.core.dirs import builtin
from sparktui.core.errors import Invalid
from sparktui.core.tomlfile import Table


class OriginError(Invalid):
    """An areas or exceptions table that cannot be used; the message is one line naming the file and key."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where one failure line came from, as far as the line and the lines above it say: ``program`` as
    classify files the line; ``file`` the file its logger names (vLLM prints the base name); ``frame`` the
    path of the traceback frame that raised it; ``exception`` its class as printed; ``text`` the line. Empty
    where unsaid."""

    program: str
    file: str = ""
    frame: str = ""
    exception: str = ""
    text: str = ""  # the failure line itself, whose message a program's template may place


@dataclass(frozen=True, slots=True)
class Area:
    """A row of ``areas.toml``: what is raised under ``prefix`` (a module path's start, a folder ending in
    ``/`` or one file) files under ``family``; a logger line of ``program`` naming one of ``files`` too."""

    prefix: str
    family: str
    source: str
    program: str = ""
    files: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DomainException:
    """A row of ``exceptions.toml``: ``name`` (the class as Python prints it, module and all) and the
    classes the release derives from it, ``subclasses``, file under ``family``."""

    name: str
    family: str
    source: str
    subclasses: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Filing:
    """How an origin files a line: the family's name and, in words, which evidence did it."""

    family: str
    said: str


class Origins:
    """The areas and domain exceptions, ready to file a :class:`Provenance`."""

    def __init__(
        self, areas: tuple[Area, ...], exceptions: tuple[DomainException, ...], templates: Placed | None = None
    ) -> None:
        self.areas = areas
        self.exceptions = exceptions
        self.templates = templates or Placed(())
        # the longest prefix first: a file or a sub-package speaks before the package around it
        self._by_length = sorted(areas, key=lambda a: -len(a.prefix))
        self._files = {(a.program, f): a for a in areas for f in a.files}
        # a class by its last name, with the package it comes from (two packages may use one name)
        self._classes: dict[str, list[tuple[str, DomainException]]] = {}
        for row in exceptions:
            for name in (row.name, *row.subclasses):
                self._classes.setdefault(_last(name), []).append((name, row))

    def area_of(self, path: str) -> Area | None:
        """The area of a module path (a frame's file, wherever the package was installed), if any."""
        path = "/" + path.replace("\\", "/")
        return next((a for a in self._by_length if f"/{a.prefix}" in path), None)

    def exception_of(self, printed: str) -> DomainException | None:
        """The domain exception row that ``printed`` (a class name as a traceback gives it) is or derives
        from: the same last name, and the same top package where ``printed`` says one; a bare name only when
        one row has it."""
        rows = self._classes.get(_last(printed), [])
        if "." not in printed:
            return rows[0][1] if len(rows) == 1 else None
        top = printed.split(".", 1)[0]
        return next((row for name, row in rows if name.split(".", 1)[0] == top), None)

    def template_of(self, line: str) -> tuple[Template, Area] | None:
        """The place the message of ``line`` is raised at, by the templates that read it, and its area: the
        first of them, where all are raised in areas of one family (None where none reads it, or they
        disagree)."""
        found = [(t, self.area_of(t.where.rsplit(":", 1)[0])) for t in self.templates.places(line)]
        families = {area.family if area is not None else "" for _, area in found}
        if len(families) != 1 or "" in families:
            return None
        template, area = found[0]
        return (template, area) if area is not None else None

    def file(self, provenance: Provenance) -> Filing | None:
        """The family ``provenance`` files under, by the raising frame, then the logger's file, then the place
        its message's template is raised at, then the exception's class; None where none of them is known."""
        if provenance.frame and (area := self.area_of(provenance.frame)) is not None:
            return Filing(area.family, f"raised in {_shown(provenance.frame, area.prefix)}")
        area = self._files.get((provenance.program, provenance.file))
        if provenance.file and area is not None:
            return Filing(area.family, f"logged by {provenance.file} of {area.prefix}")
        if provenance.text and (placed := self.template_of(provenance.text)) is not None:
            template, area = placed
            return Filing(area.family, f"its message is {template.program}'s, raised in {template.where}")
        if provenance.exception and (row := self.exception_of(provenance.exception)) is not None:
            kind = "" if _last(row.name) == _last(provenance.exception) else f", a kind of {row.name}"
            return Filing(row.family, f"a {provenance.exception}{kind}")
        return None


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _shown(path: str, prefix: str) -> str:
    """``path`` from the package on (``vllm/model_executor/...``), without where it was installed."""
    path = path.replace("\\", "/")
    at = ("/" + path).find("/" + prefix)
    return path[max(at, 0) :]


#: Lines above an exception that its raising frame may be: the frame, the code it quotes, the carets under it.
FRAME_LOOKBACK = 4


def raising_frame(before: list[str], frame: regex.Pattern[str]) -> regex.Match[str] | None:
    """The frame that raised the exception printed after ``before`` (its nearest lines last): the last
    line among its :data:`FRAME_LOOKBACK` lines that ``frame`` (a fallback signature's ``traceback.frame``,
    with a ``file`` group) finds."""
    for text in reversed(before[-FRAME_LOOKBACK:]):
        if (m := frame.search(text)) is not None:
            return m
    return None


def _table(path: Path) -> Table:
    return Table(
        tomlfile.read(path, lambda reason: OriginError(f"{path}: {reason}")),
        lambda key, reason: OriginError(f"{path}: {key}: {reason}"),
    )


def load_areas(path: Path | None = None) -> tuple[Area, ...]:
    """The rows of ``path`` (``diagnostics/origins/areas.toml`` by default)."""
    doc = _table(path or builtin("diagnostics") / "origins" / "areas.toml")
    doc.known(("areas",))
    rows = []
    for row in doc.tables("areas"):
        row.known(("prefix", "family", "source", "program", "files", "examples"))
        prefix = row.text("prefix")
        if prefix.startswith("/") or not (prefix.endswith("/") or "." in prefix.rsplit("/", 1)[-1]):
            raise row.fail("prefix", "a module path from its package on: a folder ending in / or a file")
        files = tuple(row.texts("files", required=False))
        program = row.text("program", required=bool(files))
        rows.append(Area(prefix, row.text("family"), row.text("source"), program, files, tuple(row.texts("examples"))))
    if len({a.prefix for a in rows}) != len(rows):
        raise OriginError(f"{path}: areas: two rows have the same prefix")
    return tuple(rows)


def load_exceptions(path: Path | None = None) -> tuple[DomainException, ...]:
    """The rows of ``path`` (``diagnostics/origins/exceptions.toml`` by default)."""
    doc = _table(path or builtin("diagnostics") / "origins" / "exceptions.toml")
    doc.known(("exceptions",))
    rows = []
    for row in doc.tables("exceptions"):
        row.known(("name", "family", "source", "subclasses", "examples"))
        rows.append(
            DomainException(
                row.text("name"),
                row.text("family"),
                row.text("source"),
                tuple(row.texts("subclasses", required=False)),
                tuple(row.texts("examples")),
            )
        )
    return tuple(rows)


def load() -> Origins:
    """The built-in areas, domain exceptions and placed templates."""
    return Origins(load_areas(), load_exceptions(), load_templates())
