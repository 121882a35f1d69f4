"""``sparktui check`` on the two spark test nodes reads the builds each node will load from the files
themselves (issue 41): spark-b's engine container holds the real ``libnccl.so.2`` of the released
``nvidia-nccl-cu12`` 2.29.2 wheel (x86_64, made with GCC 8.5; kept by ``tools/capture/nccl_wheels.py
--keep``) where ``pip install --target`` would put it, and the check blocks on it with the advisory's id,
source and fix, and prints the build table of both nodes; spark-a, with no NCCL in its image, is not named.
In the cockpit, the check (I) marks spark-b in the node bar and the report (x) carries the build table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktui.cli import main
from sparktui.core.cluster import Deployment
from sparktui.tui.screens.inventory import InventoryScreen
from tests.servers import plant
from tests.servers.cockpit import spark_cockpit
from tests.servers.sparks import Sparks
from tests.tui.test_play_screen import SIZE, shown
from tests.waiting import until

pytestmark = pytest.mark.slow  # about 40 s each: two nodes' engines, the probe hashing a 394 MB library

IMAGE = "sparktui-test/check:1"
CHECK = ["check", "--image", IMAGE, "--container", "vllm_node", "spark-a", "spark-b"]
WHEEL = json.loads((Path(__file__).parents[1] / "fixtures" / "builds" / "nccl-wheels.json").read_text())


def test_a_known_bad_nccl_in_one_engine_blocks_that_node_and_the_table_shows_its_build(
    sparks: Sparks, capsys: pytest.CaptureFixture[str]
) -> None:
    library = plant.released_nccl("nvidia-nccl-cu12", "2.29.2", "x86_64")
    facts = next(
        w for w in WHEEL if (w["package"], w["version"], w["arch"]) == ("nvidia-nccl-cu12", "2.29.2", "x86_64")
    )
    a, b = sparks.head, sparks["spark-b"]
    for node in sparks:
        plant.engine_image(node, IMAGE)
    plant.engine(a, IMAGE)
    plant.engine(b, IMAGE, nccl=library)

    code = main([*CHECK, "--json"])
    found = json.loads(capsys.readouterr().out)
    assert code == 1 and found["nodes"]["spark-b"]["verdict"] == "block"
    named = {f["signature"]: f for f in found["findings"]}
    hang = named["nccl-2-29-2-regression-hang"]
    assert hang["nodes"] == ["spark-b"] and hang["verdict"] == "block"
    assert hang["detail"].startswith("NCCL 2.29.2 on spark-b: in the affected range (== 2.29.2)")
    b_facts = found["nodes"]["spark-b"]["facts"]
    assert b_facts["probe.nccl"] == "2.29.2" and b_facts["probe.nccl_gcc"] == "8.5.0"
    assert b_facts["probe.nccl_build_id"] == facts["build_id"] and b_facts["probe.nccl_arch"] == "x86_64"
    (nccl,) = [x for x in found["builds"]["spark-b"] if x["component"] == "nccl"]
    assert nccl["sha256"] == facts["sha256"] and nccl["path"] == f"{plant.NCCL_SITE}/nvidia/nccl/lib/libnccl.so.2"
    assert not [x for x in found["builds"]["spark-a"] if x["component"] == "nccl"]
    assert "probe.nccl" not in found["nodes"]["spark-a"]["facts"]
    kernels = [x for x in found["builds"]["spark-a"] if x["component"] == "kernel"]
    assert kernels and kernels[0]["place"] == "host" and kernels[0]["gcc"]

    assert main(CHECK) == 1
    text = capsys.readouterr().out
    assert (
        "BLOCK  NCCL 2.29.2 has a hang that 2.29.3 was released to fix  [nccl-2-29-2-regression-hang] spark-b" in text
    )
    assert "advisory: https://github.com/pytorch/pytorch/pull/174338" in text
    assert "fix: Install NCCL 2.29.3 or later" in text
    table = text[text.index("builds (read from the files each node loads):") :].splitlines()
    row = next(line for line in table if "NCCL (torch's)" in line)
    assert row.split()[:2] == ["spark-b", "image"]
    for cell in ("2.29.2", "gcc 8.5.0", facts["build_id"][:12], facts["sha256"][:12]):
        assert cell in row
    assert any(line.split()[:3] == ["spark-a", "host", "kernel"] for line in table)


async def test_in_the_cockpit_the_node_bar_marks_the_node_and_the_report_carries_the_builds(
    sparks: Sparks, tmp_path: Path
) -> None:
    library = plant.released_nccl("nvidia-nccl-cu12", "2.29.2", "x86_64")
    for node in sparks:
        plant.engine_image(node, IMAGE)
    plant.engine(sparks.head, IMAGE)
    plant.engine(sparks["spark-b"], IMAGE, nccl=library)
    app = spark_cockpit(sparks, tmp_path, deployment=Deployment(image=IMAGE, containers=("vllm_node",)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("I")
        await until(lambda: isinstance(app.screen, InventoryScreen), 20, "the inventory's screen")
        screen = app.screen
        await until(lambda: "verdict: " in shown(screen), 90, "the verdict")
        text = shown(screen)
        assert "NCCL 2.29.2 has a hang that 2.29.3 was released to fix" in text
        assert "builds (read from the files each node loads)" in text and "NCCL (torch's)  2.29.2" in text
        await pilot.press("escape")
        bar = app.nodes_area.bar_shown.plain
        assert "spark-b loads a known-bad build (nccl-2-29-2-regression-hang; I shows the builds)" in bar
        assert "spark-a loads" not in bar
        await pilot.press("x")
        await until(lambda: any(tmp_path.glob("sparktui-report-*/report.md")), 30, "the report")
    (report,) = tmp_path.glob("sparktui-report-*/report.md")
    written = report.read_text()
    assert "### Builds" in written and "| `spark-b` | `image` | `NCCL (torch's)` | `2.29.2` | `gcc 8.5.0` |" in written
