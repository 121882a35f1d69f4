#!/usr/bin/env python3
"""Capture the inventory script's real output on this machine, as sparktui would run it on a node.

    python3 tools/capture/commands/inventory.py NAME [--model M] [--image I] [--container C]... [--no-probe]
                                                      [--out DIR]

Builds the script (sparktui.core.inventory.script), runs it with ``sh -c`` exactly as the local runner
does (standard output and error merged), and writes, unedited, ``DIR/inventory-NAME.txt`` (what it
printed) and ``DIR/inventory-NAME.meta.toml`` (the nonce the sections are framed with, the request, the
exit status and how long it took). DIR defaults to tests/fixtures/commands.

    python3 tools/capture/commands/inventory.py --probe NAME [--model M] [--python P] [--out DIR]

runs only the in-image probe with Python P (default python3), fed on stdin as the script feeds it to
``docker exec -i``, and writes ``DIR/probe-NAME.json`` and ``DIR/probe-NAME.meta.toml``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from sparktui.core.inventory import script  # noqa: E402


def _toml(values: dict[str, object]) -> str:
    return "".join(f"{k} = {json.dumps(v)}\n" for k, v in values.items())


def capture(args: argparse.Namespace, out: Path) -> None:
    request = script.Request(
        image=args.image, containers=tuple(args.container), model=args.model, probe=not args.no_probe
    )
    run = script.nonce()
    started = time.monotonic()
    done = subprocess.run(["sh", "-c", script.script(request, run)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seconds = round(time.monotonic() - started, 3)
    (out / f"inventory-{args.name}.txt").write_bytes(done.stdout)
    meta = {
        "nonce": run,
        "machine": platform.node(),
        "captured": datetime.now(UTC).isoformat(timespec="seconds"),
        "image": request.image,
        "containers": list(request.containers),
        "model": request.model,
        "probe": request.probe,
        "exit_code": done.returncode,
        "seconds": seconds,
    }
    (out / f"inventory-{args.name}.meta.toml").write_text(_toml(meta))
    print(f"inventory-{args.name}.txt: {len(done.stdout)} bytes in {seconds} s, exit {done.returncode}")


def capture_probe(args: argparse.Namespace, out: Path) -> None:
    started = time.monotonic()
    command = [args.python, "-", str(args.budget), args.model]
    done = subprocess.run(command, input=script.probe_source().encode(), capture_output=True)
    seconds = round(time.monotonic() - started, 3)
    (out / f"probe-{args.name}.json").write_bytes(done.stdout)
    meta = {
        "machine": platform.node(),
        "captured": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(command),
        "exit_code": done.returncode,
        "stderr": done.stderr.decode(errors="replace")[-2000:],
        "seconds": seconds,
    }
    (out / f"probe-{args.name}.meta.toml").write_text(_toml(meta))
    print(f"probe-{args.name}.json: {len(done.stdout)} bytes in {seconds} s, exit {done.returncode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--probe", action="store_true", help="run only the in-image probe")
    parser.add_argument("--python", default="python3")
    parser.add_argument("--budget", type=int, default=script.PROBE_BUDGET)
    parser.add_argument("--model", default="")
    parser.add_argument("--image", default="")
    parser.add_argument("--container", action="append", default=[])
    parser.add_argument("--no-probe", action="store_true")
    parser.add_argument("--out", default=str(REPO / "tests" / "fixtures" / "commands"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (capture_probe if args.probe else capture)(args, out)


if __name__ == "__main__":
    main()
