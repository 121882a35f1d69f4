"""The catalogue with the user's signature folders, each of their files held to what ``sparktui catalogue
test`` checks.

A signature or stage track of the user's that fails a check (a pattern with no literal to find its lines by,
an example it does not match, a pattern that runs out of time on its own example) is left out with one line
that names the file, the key and the reason, and the run goes on with everything else: the built-in
catalogue always loads, and a built-in file that a refused one would have replaced comes back. A file with a
built-in signature's or track's id is refused too, unless it says ``replaces = true``: then it replaces the
built-in one, and a line says so. A file that
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
        problems = id_problems(track, builtin) or check_track(track)
        if problems:
            refused.append(_line(track.path, problems))
            left_out.add(track.id)
            _put_back(tracks, track.id, {t.id: t for t in builtin.tracks})
        elif track.replaces:
            refused.append(f"{track.path} replaces the built-in stage track {track.id!r} (replaces = true)")
    signatures = {s.id: s for s in found.signatures}
    known = Catalogue(tuple(signatures.values()), tuple(tracks.values()))
    for sig in theirs_sigs:
        if sig.family_of:  # the user's fallback signature's families stand or fall with it
            continue
        if sig.stall is not None and sig.stall.track in left_out:
            problems = [f"{sig.path}: stall.track: the track {sig.stall.track!r} was left out"]
        else:
            problems = id_problems(sig, builtin) or check(sig, known)
        if problems:
            refused.append(_line(sig.path, problems))
            _put_back_signature(signatures, sig, builtin)
        elif sig.replaces:
            refused.append(f"{sig.path} replaces the built-in signature {sig.id!r} (replaces = true)")
    return replace(found, signatures=tuple(signatures.values()), tracks=tuple(tracks.values()), refused=tuple(refused))


def id_problems(item: Signature | Track, builtin: Catalogue) -> list[str]:
    """What is wrong with a user's file's id beside the built-in catalogue's: the id of a built-in signature
    or track without ``replaces = true`` (the built-in one would be gone without a word), ``replaces = true``
    with no built-in one of that id, or the id of a built-in fallback signature's family (made from it)."""
    kind = "signature" if isinstance(item, Signature) else "stage track"
    theirs = builtin.signatures if isinstance(item, Signature) else builtin.tracks
    ours = {s.id: s for s in theirs}
    mine = ours.get(item.id)
    if isinstance(mine, Signature) and mine.family_of:
        return [f"{item.path}: id: {item.id!r} names a family of the built-in signature {mine.family_of!r}"]
    if mine is not None and not item.replaces:
        why = f"{item.id!r} is a built-in {kind}'s id (say replaces = true to replace it, or choose another id)"
        return [f"{item.path}: id: {why}"]
    if mine is None and item.replaces:
        return [f"{item.path}: replaces: no built-in {kind} has the id {item.id!r}"]
    return []


def _put_back_signature(signatures: dict[str, Signature], sig: Signature, builtin: Catalogue) -> None:
    """:func:`_put_back` for a signature, with its families: the built-in one's (in their places), or none."""
    mine = {s.id: s for s in builtin.signatures}
    kept: dict[str, Signature] = {}
    for s in signatures.values():
        if s.family_of == sig.id:
            continue
        if s.id != sig.id:
            kept[s.id] = s
        elif sig.id in mine:
            kept[sig.id] = mine[sig.id]
            kept.update((f.id, f) for f in builtin.signatures if f.family_of == sig.id)
    signatures.clear()
    signatures.update(kept)


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
