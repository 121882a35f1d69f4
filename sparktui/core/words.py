"""How numbers and lists read in a sentence: one phrasing for every message, report and screen."""

from __future__ import annotations

from collections.abc import Sequence

#: Names a sentence lists before it counts the rest ("a, b, … and 40 more").
NAMED = 12


def ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` as "0-2, 5"."""
    out: list[str] = []
    start = prev = numbers[0]
    for n in [*numbers[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(out)


def join(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"; past :data:`NAMED` items, the first ones and how many more."""
    if len(items) > NAMED:
        return listed(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def listed(items: Sequence[str]) -> str:
    """ "a, b, c"; past :data:`NAMED` items, the first ones and how many more ("a, b, … and 40 more")."""
    if len(items) > NAMED:
        return f"{', '.join(items[:NAMED])} and {len(items) - NAMED} more"
    return ", ".join(items)


#: Binary units, largest first, with what each is worth.
_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def unit(count: int) -> tuple[int, str]:
    """The unit ``count`` bytes are written in, and how many bytes it holds: ``(1, "B")`` below a KiB."""
    return next(((scale, name) for name, scale in _UNITS if count >= scale), (1, "B"))


def size(count: int) -> str:
    """Bytes the way people read them: ``812 B``, ``12.5 KiB``, ``64.0 MiB``, ``1.2 GiB``."""
    scale, name = unit(count)
    return f"{count} B" if scale == 1 else f"{count / scale:.1f} {name}"


def span(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``."""
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"
