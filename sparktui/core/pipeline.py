"""Running an analysis over sources: the one entry point the CLI, the app and the tests share."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sparktui.core.analysis.analyzer import Analyzer
from sparktui.core.analysis.diagnosis import Diagnosis
from sparktui.core.catalogue import Catalogue
from sparktui.core.sources.files import FileSource, SourceError

#: Called after each block with (source name, lines read so far in that source).
Progress = Callable[[str, int], None]


def diagnose_files(sources: Sequence[FileSource], catalogue: Catalogue, progress: Progress | None = None) -> Diagnosis:
    """Read every file to the end and return the diagnosis. A file that fails part-way keeps what was
    read from it and is reported in the diagnosis' sources with its error."""
    analyzer = Analyzer(catalogue)
    for source in sources:
        analyzer.add_source(source.name, source.default_node())
        read = 0
        try:
            for block in source.blocks():
                analyzer.feed(source.name, block)
                read += block.count("\n") + 1
                if progress is not None:
                    progress(source.name, read)
        except SourceError as exc:
            analyzer.source_failed(source.name, str(exc))
    return analyzer.finish()
