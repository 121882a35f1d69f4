"""copy-image-to-nodes on the two spark test nodes: the stream shows throttled progress lines and docker load's
own line, and a stream cut off midway fails the step although dash has no pipefail.

The source's link is slowed with tc, so that a 40 MB image takes a few seconds to arrive."""

from __future__ import annotations

import io
import os
import re
import tarfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sparktui.cli import main
from tests.servers.books import changed
from tests.servers.cockpit import run, spark_cockpit, type_in
from tests.servers.sparks import ENGINE_IMAGE, IFACE, SparkNode, Sparks, audit
from tests.tui.test_play_screen import SIZE as SCREEN
from tests.tui.test_play_screen import log_lines, open_playbook
from tests.waiting import wait_until

NODES = ["--node", "spark-a", "--node", "spark-b"]
IMAGE = "sparktui-test/big:1"
SIZE = 40_000_000
RATE = "100mbit"  # 12.5 MB/s: the image takes over 3 s, so dd reports a few times before its final count
STREAM = "Stream the image from the source where it differs"
PROGRESS = re.compile(r"spark-b copied (\d+) MB of ~(\d+) MB \((\d+)%\), \d+(?:\.\d+)? [kMG]?B/s$", re.M)


def big_image(node: SparkNode) -> str:
    """IMAGE on ``node`` only, one layer holding SIZE random bytes (nothing on the way compresses them); its ID."""
    blob = tarfile.TarInfo("blob")
    blob.size = SIZE
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        tar.addfile(blob, io.BytesIO(os.urandom(SIZE)))
    repository, tag = IMAGE.split(":")
    node.docker.api.import_image_from_data(layer.getvalue(), repository=repository, tag=tag)
    return str(node.docker.api.inspect_image(IMAGE)["Id"])


@contextmanager
def slow_link(node: SparkNode) -> Iterator[None]:
    """The node sends at RATE on its interface (a token bucket), as over a slower link."""
    node.run(f"tc qdisc add dev {IFACE} root tbf rate {RATE} burst 1mb latency 50ms")
    try:
        yield
    finally:
        node.run(f"tc qdisc del dev {IFACE} root")


def copy_image(source: SparkNode) -> int:
    given = ["--set", f"image={IMAGE}", "--set", f"source={source.address}"]
    return main(["play", "copy-image-to-nodes", *NODES, *given, "--yes"])


def test_the_stream_shows_a_progress_line_every_5_seconds_and_the_final_count(
    sparks: Sparks, capsys: pytest.CaptureFixture[str]
) -> None:
    worker = sparks.workers[0]
    image_id = big_image(sparks.head)
    with slow_link(sparks.head):
        started = time.monotonic()
        assert copy_image(sparks.head) == 0
        took = time.monotonic() - started
    out = capsys.readouterr().out
    progress = PROGRESS.findall(out)
    # dd reports at 1 s, 2 s...: shown are the first, one 5 s later and so on, and the final count.
    assert 2 <= len(progress) <= 2 + (took - 1) / 5, out
    first, *_, last = progress
    assert first[1] == last[1] == "40" and int(first[2]) < 100
    assert last[0] == "40" and last[2] == "100"
    assert out.index(f"spark-b Loaded image: {IMAGE}") > out.rindex("spark-b copied ")
    assert not re.search(r"spark-b \d+\+\d+ records", out)  # dd's record counts are left out
    assert "spark-a this is the source node" in out
    assert worker.docker.api.inspect_image(IMAGE)["Id"] == image_id
    assert ("spark-b", STREAM, 0) in audit()


def test_a_node_that_has_the_same_image_is_left_alone(sparks: Sparks, capsys: pytest.CaptureFixture[str]) -> None:
    source, worker = sparks.head.docker.api, sparks.workers[0].docker.api
    source.tag(ENGINE_IMAGE, *IMAGE.split(":"))
    worker.load_image(b"".join(source.get_image(IMAGE)))
    image_id = source.inspect_image(IMAGE)["Id"]
    assert worker.inspect_image(IMAGE)["Id"] == image_id
    assert copy_image(sparks.head) == 0
    out = capsys.readouterr().out
    assert f"spark-b already here: {image_id}" in out and "spark-b copied" not in out


def cut_off(source: SparkNode) -> None:
    """Kill the source's docker save a second after it starts, midway through the stream."""
    running = f"pgrep -xf 'docker save {IMAGE}'"
    pid = wait_until(lambda: source.run(running, check=False).stdout.strip(), 60, "docker save")
    time.sleep(1)
    source.run(f"kill {pid}")


def test_a_stream_cut_off_midway_fails_the_step(sparks: Sparks, capsys: pytest.CaptureFixture[str]) -> None:
    big_image(sparks.head)
    with slow_link(sparks.head):
        killer = threading.Thread(target=cut_off, args=(sparks.head,))
        killer.start()
        code = copy_image(sparks.head)
        killer.join()
    assert code == 1
    out = capsys.readouterr().out
    assert "unexpected EOF" in out  # docker load on the truncated tar
    assert re.search(r"spark-b the stream failed: docker save on the source exited [1-9]\d*, docker load here 1\n", out)
    assert ("spark-b", STREAM, 1) in audit()
    assert not sparks.workers[0].docker.api.images(IMAGE)
    assert "spark-b unchanged here" in out, out  # by the rollback: nothing was loaded


@pytest.mark.parametrize("tagged_before", [True, False])
def test_the_rollback_gives_the_tag_back_to_the_image_that_had_it(
    sparks: Sparks, tmp_path: Path, capsys: pytest.CaptureFixture[str], tagged_before: bool
) -> None:
    """spark-b gets the source's image under IMAGE, then a later step fails: the rollback tags spark-b's old
    image again, or removes the copy where no image had the tag."""
    worker = sparks.workers[0].docker.api
    big_image(sparks.head)
    if tagged_before:
        worker.tag(ENGINE_IMAGE, *IMAGE.split(":"))
    old = worker.inspect_image(IMAGE)["Id"] if tagged_before else ""
    books = changed(tmp_path, "copy-image-to-nodes", then_fail=True)
    given = ["--set", f"image={IMAGE}", "--set", f"source={sparks.head.address}"]
    assert main(["play", "copy-image-to-nodes", "--playbooks", str(books), *NODES, *given, "--yes"]) == 1
    out = capsys.readouterr().out
    assert f"spark-b Loaded image: {IMAGE}" in out and "spark-a no image was loaded here by this run" in out
    if tagged_before:
        assert f"spark-b tagged again: {IMAGE} = {old}" in out
        assert worker.inspect_image(IMAGE)["Id"] == old
    else:
        assert "spark-b removed the copy: no image had the tag before" in out
        assert not worker.images(IMAGE)


async def test_from_the_cockpit_the_image_in_the_log_streams_with_progress(sparks: Sparks, tmp_path: Path) -> None:
    """The image comes from docker's own line; the source is typed in on `e`; the progress lines stream into
    the screen as the image arrives."""
    image_id = big_image(sparks.head)
    app = spark_cockpit(sparks, tmp_path, {"docker.log": f"Unable to find image '{IMAGE}' locally\n"})
    async with app.run_test(size=SCREEN) as pilot:
        screen = await open_playbook(pilot, app, "docker-image-not-local", "c")
        await type_in(pilot, screen, {"source": sparks.head.address})
        with slow_link(sparks.head):
            assert "Succeeded" in await run(pilot, screen, 120)
        streamed = "\n".join(line.strip() for line in log_lines(screen))
    assert PROGRESS.search(streamed) and f"spark-b Loaded image: {IMAGE}" in streamed
    assert sparks.workers[0].docker.api.inspect_image(IMAGE)["Id"] == image_id
