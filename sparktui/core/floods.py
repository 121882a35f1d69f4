"""Many sources saying the same thing: the lines of the first few sources to say each kind are shown, the rest
counted into one line per kind ("… and the same from 4,997 more"). A resume of 5,000 files, or 5,000 files past
the limit on open files, said each one line of its own (trial 2026-12c, R2 and F12); the JSON keeps every one.

A line's kind is its text with the source's name and every number taken out, so "n0001.log: retrying in
0.3 s" and "n0002.log: retrying in 1.2 s" are one kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Lines of one kind shown before the rest are only counted.
SHOWN = 3

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def kind(source: str, text: str) -> str:
    """The kind of ``source``'s line ``text``."""
    return _NUMBER.sub("#", text.replace(source, "…") if source else text)


@dataclass
class _Kind:
    last: str = ""  # the last source shown
    shown: set[str] = field(default_factory=set)  # the sources whose lines of this kind are shown
    hidden: int = 0
    sources: set[str] = field(default_factory=set)  # those of the lines not shown


@dataclass
class Flood:
    """Counts each kind's lines as they come: :meth:`admit` says whether to show one, :meth:`folded` what was not
    shown, a line per kind."""

    shown: int = SHOWN
    _kinds: dict[str, _Kind] = field(default_factory=dict)

    def admit(self, source: str, text: str) -> bool:
        """Whether ``source``'s line ``text`` is shown: it is of one of the first :attr:`shown` sources to say a
        line of its kind (one source saying it again and again, a retry, is still heard)."""
        seen = self._kinds.setdefault(kind(source, text), _Kind())
        if source in seen.shown or len(seen.shown) < self.shown:
            seen.shown.add(source)
            seen.last = source
            return True
        seen.hidden += 1
        seen.sources.add(source)
        return False

    def folded(self) -> list[str]:
        """For each kind with lines not shown: how many, of how many sources, like which line shown."""
        return [_said(k) for k in self._kinds.values() if k.hidden]


def _said(k: _Kind) -> str:
    sources = f"{len(k.sources):,} source{'s' if len(k.sources) > 1 else ''}"
    if k.hidden == len(k.sources):
        return f"… and the same from {len(k.sources):,} more (like {k.last}'s above), not shown"
    return f"… and {k.hidden:,} more lines like {k.last}'s above, from {sources}, not shown"
