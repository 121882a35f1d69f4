"""Every command in the README's shell blocks runs as written: each one that needs nothing but this checkout
runs for real (``python -m sparktui ...`` from the top of the checkout, on its fixtures) and ends as the
README says, never with a usage error or a traceback; the others are listed here with what they need."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from .conftest import ROOT

README = ROOT / "README.md"
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)

#: Commands that cannot run here, and what they need instead.
NOT_RUN = {
    "pip install -e '.[fast]'": "installs the package and its dependencies from the package index",
    "sparktui demo": "the cockpit: a full-screen terminal (tests/tui/test_terminal.py runs the demo in tmux)",
    "sparktui discover nvidia@spark-a nvidia@spark-b": "two cluster nodes over SSH (tests/sources/test_discover.py)",
    "sparktui": "the cockpit on a cluster file: a terminal and the nodes over SSH",
    "sparktui play free-port --set port=8000": "asks on a terminal, then runs over SSH (tests/sparks runs playbooks)",
    "sparktui node-a.log logs/ ssh://spark-b/docker/vllm_node": "the cockpit, a node over SSH with Docker",
    "sparktui replay sparktui/demo/second-communicator --speed 10": "the cockpit: a full-screen terminal",
    "sparktui check --launch 'vllm serve /models/qwen --tensor-parallel-size 2' spark-a spark-b": (
        "two cluster nodes over SSH (tests/sparks/test_check_on_sparks.py)"
    ),
    "python bench/check_nodes.py --repeat 3": "root, to start the spark test nodes (a benchmark)",
    "bash tools/test.sh": "root, to install sshd, Docker, Chromium... through apt; then the whole suite",
    "sparktui check --serving http://spark-a:8000": "a started server (tests/serving runs it on a real vLLM CPU one)",
    "python bench/diagnose_vs_rg.py --mb 200": "ripgrep and minutes of CPU (a benchmark)",
    "python bench/tui_responsiveness.py --rate 10000": "a benchmark of the cockpit that floods it for a minute",
    "python bench/tui_scale.py --files 5000 --mb 64": "a benchmark of the cockpit on 5,000 files and 64 MiB, minutes",
    "python bench/fanout.py --nodes 64 --rate 20000 --seconds 20": "64 sshd on loopback addresses (a benchmark)",
    "python bench/spool_write.py --mb 20": "a benchmark: minutes of CPU",
    "python bench/redos.py --cap 20": "a benchmark: catastrophic patterns against every engine, a minute",
    "python bench/secret_kinds.py --mb 0.5": "a benchmark (tests/core/test_redact.py checks its table of kinds)",
    "sparktui diagnose ray://head:6379": "a Ray cluster (tests/sources/test_ray_edge.py starts one on loopback)",
    "sparktui diagnose --edge ray://head:6379": "a Ray cluster (tests/sources/test_ray_edge.py starts one on loopback)",
    "sparktui diagnose --edge --follow --for 5m ray://head:6379": "a Ray cluster, for five minutes",
    "python bench/ray_edge.py --nodes 4 --mb 100": "root and a 4-node Ray cluster on loopback (a benchmark, minutes)",
    "sparktui stacks spark-a spark-b": "hung ranks on nodes over SSH (tests/stacks: real ones, over SSH, in Docker)",
}

#: How the commands that do not end with 0 end, as the README says: (exit status, words on stderr or stdout).
ENDS = {
    # "exit 1 when something does [reach --fail-on]": the hang is critical.
    "sparktui diagnose tests/fixtures/nccl/two-hosts-second-group-not-joined": (1, "never"),
    # "refused: read-only mode runs only read-only playbooks", in one line.
    "sparktui play ray-start-cluster --readonly": (2, "refused in read-only mode"),
    # the stall is an error: "exits 1 ... as diagnose does on an error"
    "sparktui diagnose tests/fixtures/vllm/serving-stalled": (1, "no token has been generated"),
    # "exits 1 when ranks wait on a rank that is elsewhere or missing": rank 3 never joined collective #3.
    "sparktui stacks --flight tests/fixtures/stacks/nccl/skip-collective/fr": (1, "rank 3 never joined collective #3"),
}


def examples() -> list[tuple[str, list[str]]]:
    """Each command of the README's ``sh`` blocks (continued lines joined, its comment dropped) with the
    output written under it (the ``# ...`` lines that follow it, but those in parentheses, which describe)."""
    found: list[tuple[str, list[str]]] = []
    for block in BLOCK.findall(README.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("#"):
                said = line.lstrip("# ")
                if found and not said.startswith("("):
                    found[-1][1].append(said)
            elif line.strip():
                found.append((shlex.join(shlex.split(line, comments=True)), []))
    return found


EXAMPLES = examples()
RUN = [(command, output) for command, output in EXAMPLES if command not in NOT_RUN]


def test_every_example_is_run_or_says_why_not() -> None:
    commands = [command for command, _ in EXAMPLES]
    assert set(NOT_RUN) <= set(commands), set(NOT_RUN) - set(commands)  # none left over from an older README
    assert set(ENDS) <= {command for command, _ in RUN}
    assert all(command.startswith("sparktui ") for command, _ in RUN), [c for c, _ in RUN]
    assert len(RUN) >= 9


@pytest.mark.parametrize(("command", "output"), RUN, ids=[command for command, _ in RUN])
def test_the_example_runs_as_written(command: str, output: list[str]) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    argv = [sys.executable, "-m", "sparktui", *shlex.split(command)[1:]]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    code, words = ENDS.get(command, (0, ""))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == code, done.stderr
    assert words in done.stdout + done.stderr
    if output:
        assert done.stdout.splitlines()[: len(output)] == output
