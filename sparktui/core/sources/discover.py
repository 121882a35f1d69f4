"""From command-line arguments to sources: files, directories of logs and incident bundles."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sparktui.core.sources.bundle import BundleError, is_bundle
from sparktui.core.sources.bundle import load as load_bundle
from sparktui.core.sources.files import FileSource, looks_binary, unique_names


def discover(arguments: Iterable[str]) -> tuple[list[FileSource], list[str]]:
    """Expand the command-line arguments into file sources; returns the sources and one-line problems
    (a missing path, an unreadable directory, binary files skipped inside a directory). A directory with a
    ``bundle.toml`` is read as the bundle's logs, with the nodes its manifest names."""
    sources: list[FileSource] = []
    problems: list[str] = []
    for arg in arguments:
        path = Path(arg)
        if is_bundle(path):
            try:
                loaded = load_bundle(path)
            except BundleError as exc:
                problems.append(str(exc))
                continue
            sources += [FileSource(s.path, s.name, s.node) for s in loaded.sources]
        elif path.is_dir():
            try:
                files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            except OSError as exc:
                problems.append(f"{arg}: cannot list directory: {exc.strerror or exc}")
                continue
            for file in files:
                if looks_binary(file):
                    problems.append(f"{file}: skipped, not a text log")
                    continue
                sources.append(FileSource(file, str(file.relative_to(path))))
        elif path.exists():
            sources.append(FileSource(path, path.name))
        else:
            problems.append(f"{arg}: no such file or directory")
    return unique_names(sources), problems
