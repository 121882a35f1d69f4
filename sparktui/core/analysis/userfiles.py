"""The catalogue with the user's signature folders, each of their files held to what ``sparktui catalogue
test`` checks.

A signature or stage track of the user's that fails a check (a pattern with no literal to find its lines by,
an example it does not match, a pattern that runs out of time on its own example) is left out with one line
that names the file, the key and the reason, and the run goes on with everything else: the built-in
catalogue always loads, and a built-in file that a refused one would have replaced comes back. A file that
is no signature at all (not TOML, a key missing) still stops the run: :func:`sparktui.core.catalogue.load`
refuses it, as it always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from sparktui.core import catalogue as cat
from sparktui.core.analysis.examples import check, check_track
from sparktui.core.catalogue import Catalogue, Signature, Track

Item = TypeVar("Item", Signature, Track)


def load(extra_dirs: Sequence[Path]) -> Catalogue:
    """The built-in catalogue and ``extra_dirs`` (see :func:`sparktui.core.catalogue.load`), less the user's
    files that fail their checks; :attr:`Catalogue.refused` says which, and why."""
    found = cat.load(extra_dirs)
    theirs_tracks = [t for t in found.tracks if not cat.is_builtin(t.path)]
    theirs_sigs = [s for s in found.signatures if not cat.is_builtin(s.path)]
    if not theirs_tracks and not theirs_sigs:
        return found
    builtin = cat.load()
    refused: list[str] = []
    tracks = {t.id: t for t in found.tracks}
    left_out: set[str] = set()
    for track in theirs_tracks:
        problems = check_track(track)
        if problems:
            refused.append(_line(track.path, problems))
            left_out.add(track.id)
            _put_back(tracks, track.id, {t.id: t for t in builtin.tracks})
    signatures = {s.id: s for s in found.signatures}
    known = Catalogue(tuple(signatures.values()), tuple(tracks.values()))
    for sig in theirs_sigs:
        if sig.stall is not None and sig.stall.track in left_out:
            problems = [f"{sig.path}: stall.track: the track {sig.stall.track!r} was left out"]
        else:
            problems = check(sig, known)
        if problems:
            refused.append(_line(sig.path, problems))
            _put_back(signatures, sig.id, {s.id: s for s in builtin.signatures})
    return replace(found, signatures=tuple(signatures.values()), tracks=tuple(tracks.values()), refused=tuple(refused))


def _put_back(items: dict[str, Item], item_id: str, builtin: dict[str, Item]) -> None:
    """The built-in item of that id where there is one (in its place), else none."""
    if item_id in builtin:
        items[item_id] = builtin[item_id]
    else:
        del items[item_id]


def _line(path: Path, problems: list[str]) -> str:
    """One line for a file left out: its first problem (already ``file: key: reason``), and how many more."""
    more = f" (and {len(problems) - 1} more: sparktui catalogue test {path})" if len(problems) > 1 else ""
    return f"left out {problems[0]}{more}"
