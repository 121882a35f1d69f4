"""The finding categories: a stable public interface, written once, in ``diagnostics/taxonomy.md``, whose
table of categories is read here (a signature naming any other category is refused on load)."""

from __future__ import annotations

import re

from sparktui.core.dirs import builtin

#: A row of the categories table: | `category` | meaning |
_ROW = re.compile(r"^\| `([a-z0-9_]+)` \| (.+?) \|\s*$", re.M)


def _categories() -> dict[str, str]:
    text = (builtin("diagnostics") / "taxonomy.md").read_text(encoding="utf-8")
    section = text.split("## Categories", 1)[1].split("\n## ", 1)[0]
    return dict(_ROW.findall(section))


#: Category -> what it means.
CATEGORIES: dict[str, str] = _categories()
