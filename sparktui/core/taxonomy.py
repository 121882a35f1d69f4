"""The finding categories: a stable public interface, written once, in ``diagnostics/taxonomy.md``, whose
table of categories is read here (a signature naming any other category is refused on load), with which of
them are hangs (its ``hang`` column)."""

from __future__ import annotations

import re

from sparktui.core.dirs import builtin

#: A row of the categories table: | `category` | hang | meaning |, ``hang`` being ``yes`` or empty.
_ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (yes)? ?\| (.+?) \|\s*$", re.M)


def _rows() -> list[tuple[str, str, str]]:
    text = (builtin("diagnostics") / "taxonomy.md").read_text(encoding="utf-8")
    section = text.split("## Categories", 1)[1].split("\n## ", 1)[0]
    return _ROW.findall(section)


_TABLE = _rows()
#: Category -> what it means.
CATEGORIES: dict[str, str] = {category: meaning for category, _, meaning in _TABLE}
#: The categories whose findings say something stopped moving, whatever their signature's kind.
HANGS: frozenset[str] = frozenset(category for category, hang, _ in _TABLE if hang)
