"""Files scanned in worker processes give the diagnosis of a scan in one process, whatever the workers'
timing; a file that breaks part-way is reported and the others are read."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from sparktui.core.catalogue import Catalogue
from sparktui.core.pipeline import run
from sparktui.core.sources.files import FileRead
from sparktui.core.sources.open import file_sources

from ..conftest import FIXTURES

#: Four ranks on four emulated hosts (one log each), hung at the first collective.
HANG = FIXTURES / "nccl4" / "four-hosts-first-collective-hang"


def diagnose(catalogue: Catalogue, path: Path, workers: int) -> dict[str, object]:
    sources, _ = file_sources([str(path)])
    return run(catalogue, [FileRead(s) for s in sources], show=False, refresh=False, workers=workers).wait().as_dict()


def test_workers_give_the_diagnosis_of_one_process(catalogue: Catalogue, tmp_path: Path) -> None:
    for i in range(3):  # more files than workers, of different lengths: they finish out of order
        for rank in range(4):
            log = (HANG / f"rank{rank}.log").read_bytes()
            (tmp_path / f"run{i}-rank{rank}.log").write_bytes(log * (1 + (rank + i) % 3))
    one = diagnose(catalogue, tmp_path, 1)
    assert one["findings"] and one["progress"]
    assert diagnose(catalogue, tmp_path, 3) == one


def test_a_file_that_breaks_part_way_is_reported_and_the_others_are_read(catalogue: Catalogue, tmp_path: Path) -> None:
    for rank in range(4):
        shutil.copy(HANG / f"rank{rank}.log", tmp_path / f"rank{rank}.log")
    whole = gzip.compress((HANG / "rank0.log").read_bytes() * 400)
    (tmp_path / "old.log.gz").write_bytes(whole[: len(whole) // 2])  # a copy cut short
    d = diagnose(catalogue, tmp_path, 2)
    sources = {s["name"]: s for s in d["sources"]}  # type: ignore[attr-defined]
    assert "read failed" in sources["old.log.gz"]["error"] and sources["old.log.gz"]["lines"] > 0
    assert all("error" not in sources[f"rank{r}.log"] for r in range(4))
    assert d["findings"]
