"""The shell script that gathers one node's stacks, and reading what it prints back. The script only reads:
GPU state (``nvidia-smi``), what NCCL's RAS port on the node's loopback says (:mod:`~sparktui.core.stacks.ras`,
asked by the node's ``python3`` where there is one), the rank processes in ``/proc`` and ``py-spy dump`` of
each, on the host and inside each container (``docker exec``, through the node's Docker engine).

Rank processes are Python processes with ``RANK`` in their environment (torchrun's children, any
torch.distributed launcher; not a shell or a container's init that started one and holds the same
variables), the engines' workers by their titles (vLLM's and Ray's workers, SGLang's schedulers), and, on
the host, every process holding a GPU. Python processes whose environment may not be read (another user's,
without root) are counted, so that a search that could not see them is not taken for "no rank here". On
the host, processes of another PID namespace are left to the container they run in. The node's own host
name is said too (the logs name nodes by it). Everything the script prints is framed by marker lines
carrying a nonce, so no program's output can pass for one.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

#: The titles of engine rank processes: vLLM's workers (Ray's or its own) and engine core, SGLang's schedulers
#: (not the API servers, nor SGLang's detokenizer: they are no ranks, and idle they would read as the rank
#: elsewhere).
ENGINE_PATTERN = r"ray::RayWorkerWrapper|VLLM::Worker|VLLM::EngineCore|sglang::scheduler"
#: The environment a rank's group (and, by NCCL_HOSTID, the host it stands for) is read from.
ENV_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "NCCL_HOSTID")
#: Where the py-spy-stacks playbook puts the py-spy it brings (looked for when none is on the PATH).
BROUGHT = "/tmp/sparktui-py-spy/bin/py-spy"
GPU_QUERY = "uuid,index,name,utilization.gpu,power.draw,clocks.sm"
#: NCCL's RAS client, as its own client speaks it (protocol 2: NCCL 2.24 on): the report as text, its peers
#: given 3 s to answer; nothing where no NCCL process listens ($1: the port; $2, the run's nonce, keeps it from
#: being taken for a rank).
RAS_CLIENT = """import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3)
    s.settimeout(6)
    f = s.makefile("rb")
    for line in ("CLIENT PROTOCOL 2", "TIMEOUT 3", "SET FORMAT text"):
        s.sendall(line.encode() + b"\\n")
        if not f.readline().strip():
            sys.exit()
    s.sendall(b"VERBOSE STATUS\\n")
    while True:
        chunk = f.read1(65536)
        if not chunk:
            break
        sys.stdout.write(chunk.decode("utf-8", "replace"))
except (OSError, ValueError):
    pass
"""

# The part that runs in one place (the host, or a container through docker exec): $1 nonce, $2 samples,
# $3 seconds between samples, $4 py-spy's extra flags, $5 seconds per dump, $6 "host" or "container",
# $7 the GPU pids (host only), $8 the py-spy to use ("" for the PATH's, else the one brought), $9 the rank
# processes already known (host only; "" to look for them).
_PLACE = r"""n=$1; samples=$2; gap=$3; flags=$4; bound=$5; where=$6; gpupids=" $7 "; spy=$8; known=$9
mark() { echo "@@stacks $n $*"; }
if [ -n "$spy" ]; then [ -x "$spy" ] || spy=; else spy=$(command -v py-spy 2>/dev/null) || spy=; fi
[ -n "$spy" ] || { [ -x BROUGHT ] && spy=BROUGHT; }
[ -n "$spy" ] || mark nopyspy
t=; command -v timeout >/dev/null 2>&1 && t="timeout $bound"
self=$(readlink /proc/self/ns/pid 2>/dev/null)
pids=; hidden=0
for p in $known; do [ -d "/proc/$p" ] && pids="$pids $p"; done
[ -n "$known" ] || for d in /proc/[0-9]*; do
  p=${d#/proc/}; [ "$p" = "$$" ] && continue
  cmd=$(tr '\000' ' ' < "$d/cmdline" 2>/dev/null) || continue; [ -n "$cmd" ] || continue
  case "$cmd" in *"$n"*) continue ;; esac
  ns=$(readlink "$d/ns/pid" 2>/dev/null)
  if [ "$where" = host ] && [ -n "$ns" ] && [ "$ns" != "$self" ]; then continue; fi
  pick=
  case "$gpupids" in *" $p "*) pick=1 ;; esac
  printf '%s' "$cmd" | grep -Eq 'ENGINE' && pick=1
  if [ -z "$pick" ]; then
    a0=$(tr '\000' '\n' < "$d/cmdline" 2>/dev/null | head -n 1)
    case "${a0##*/}" in
      python*)
        if env=$(tr '\000' '\n' < "$d/environ" 2>/dev/null); then
          case "$env" in RANK=*|*"
RANK="*) pick=1 ;; esac
        elif [ -d "$d" ]; then
          hidden=$((hidden + 1))
        fi ;;
    esac
  fi
  [ -n "$pick" ] && pids="$pids $p"
done
[ "$hidden" -gt 0 ] && mark hidden "$hidden"
for p in $pids; do
  mark proc "$p"
  tr '\000' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-400; echo
  mark env "$p"
  tr '\000' '\n' < "/proc/$p/environ" 2>/dev/null | grep -E '^(ENVS)='
done
i=0
while [ "$i" -lt "$samples" ]; do
  [ "$i" -gt 0 ] && sleep "$gap"
  for p in $pids; do
    [ -d "/proc/$p" ] || { mark gone "$p" "$i"; continue; }
    [ -n "$spy" ] || continue
    mark dump "$p" "$i" "$(date +%s.%N 2>/dev/null || date +%s)"
    $t "$spy" dump $flags --pid "$p" 2>&1; echo
  done
  i=$((i + 1))
done
mark done"""
PLACE = _PLACE.replace("BROUGHT", BROUGHT).replace("ENGINE", ENGINE_PATTERN).replace("ENVS", "|".join(ENV_NAMES))


def nonce() -> str:
    return secrets.token_hex(6)


@dataclass(frozen=True, slots=True)
class Request:
    samples: int = 3
    interval: float = 1.0
    native: bool = False
    per_dump: int = 10
    containers: tuple[str, ...] = ()  # () = every running container the engine lists
    py_spy: str = ""  # the py-spy on the nodes ("" for the one on the PATH)
    known: tuple[int, ...] = ()  # the host's rank processes, already found (the live watch's): not looked for
    ras_port: int = 0  # NCCL's RAS port on the node's loopback, asked once (0: not asked)


def script(request: Request, run: str) -> str:
    """The script for one node: GPU state, then the host's ranks, then each container's."""
    flags = "--native" if request.native else ""
    args = [run, str(request.samples), f"{request.interval:g}", flags, str(request.per_dump)]
    body = shlex.quote(PLACE)
    spy = shlex.quote(request.py_spy)
    quoted = " ".join(shlex.quote(a) for a in args)
    known = shlex.quote(" ".join(str(p) for p in request.known))
    listing = (
        " ".join(shlex.quote(c) for c in request.containers)
        if request.containers
        else "$(docker ps --format '{{.Names}}' 2>/dev/null)"
    )
    # RAS is asked in the background, while the ranks are dumped: its thread may wait 3 s for its peers
    ras = (
        f"command -v python3 >/dev/null 2>&1 && rasout=$(mktemp 2>/dev/null) && "
        f'{{ python3 -c {shlex.quote(RAS_CLIENT)} {request.ras_port} "$n" >"$rasout" 2>/dev/null & }}\n'
        if request.ras_port
        else ""
    )
    return f"""n={shlex.quote(run)}
mark() {{ echo "@@stacks $n $*"; }}
mark hostname "$(cat /proc/sys/kernel/hostname 2>/dev/null)"
mark arch "$(uname -m 2>/dev/null)"
gpupids=
if command -v nvidia-smi >/dev/null 2>&1; then
  mark gpu; nvidia-smi --query-gpu={GPU_QUERY} --format=csv,noheader 2>&1
  mark apps; nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader 2>&1
  gpupids=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | tr -d ' ' | tr '\\n' ' ')
fi
rasout=
{ras}mark place host
sh -c {body} sh {quoted} host "$gpupids" {spy} {known}
if command -v docker >/dev/null 2>&1; then
  for c in {listing}; do
    mark place "$c"
    docker exec "$c" sh -c {body} sh {quoted} container "" {spy} 2>&1 || mark noexec "$c"
  done
fi
if [ -n "$rasout" ]; then wait; mark ras; cat "$rasout"; rm -f "$rasout"; fi
mark end"""


@dataclass
class Found:
    """One process the script found, in one place of the node."""

    place: str
    pid: int
    command: str = ""
    env: dict[str, str] = field(default_factory=dict)
    dumps: list[tuple[int, float, str]] = field(default_factory=list)  # (sample, time, py-spy's text)
    gone_at: int | None = None


@dataclass
class NodeOutput:
    """What the script printed on one node, read back."""

    hostname: str = ""
    arch: str = ""  # the machine's, as uname -m says it (its containers run on it)
    gpus: list[str] = field(default_factory=list)
    apps: list[str] = field(default_factory=list)
    ras: list[str] = field(default_factory=list)  # NCCL's RAS report, as printed
    places: list[str] = field(default_factory=list)
    no_py_spy: list[str] = field(default_factory=list)  # the places without py-spy
    no_exec: list[str] = field(default_factory=list)  # containers docker exec could not enter
    hidden: dict[str, int] = field(default_factory=dict)  # per place: Python processes not ours to inspect
    processes: list[Found] = field(default_factory=list)
    ended: bool = False


def read(lines: Sequence[str], run: str) -> NodeOutput:
    """The sections of one run's output; lines without the run's markers belong to the section above."""
    out = NodeOutput()
    prefix = f"@@stacks {run} "
    section: list[str] | None = None
    place = ""
    by_pid: dict[tuple[str, int], Found] = {}
    for line in lines:
        if not line.startswith(prefix):
            if section is not None:
                section.append(line)
            continue
        words = line[len(prefix) :].split()
        what, rest = (words[0], words[1:]) if words else ("", [])
        section = None
        if what == "hostname" and rest:
            out.hostname = rest[0]
        elif what == "arch" and rest:
            out.arch = rest[0]
        elif what == "gpu":
            section = out.gpus
        elif what == "apps":
            section = out.apps
        elif what == "ras":
            section = out.ras
        elif what == "place" and rest:
            place = rest[0]
            out.places.append(place)
        elif what == "nopyspy":
            out.no_py_spy.append(place)
        elif what == "hidden" and rest and rest[0].isdigit():
            out.hidden[place] = int(rest[0])
        elif what == "noexec" and rest:
            out.no_exec.append(rest[0])
        elif what in ("proc", "env", "dump", "gone") and rest and rest[0].isdigit():
            found = by_pid.setdefault((place, int(rest[0])), Found(place, int(rest[0])))
            if found not in out.processes:
                out.processes.append(found)
            section = []
            if what == "proc":
                section = _Into(found, "command")
            elif what == "env":
                section = _Into(found, "env")
            elif what == "dump":
                sample = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else len(found.dumps)
                when = _float(rest[2]) if len(rest) > 2 else 0.0
                section = _Into(found, "dump", (sample, when))
            else:
                found.gone_at = int(rest[1]) if len(rest) > 1 and rest[1].isdigit() else 0
        elif what == "end":
            out.ended = True
    return out


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


class _Into(list[str]):
    """A section whose lines go straight into a :class:`Found` as they come."""

    def __init__(self, found: Found, what: str, sample: tuple[int, float] = (0, 0.0)) -> None:
        super().__init__()
        self.found, self.what, self.sample = found, what, sample
        if what == "dump":
            found.dumps.append((sample[0], sample[1], ""))

    def append(self, line: str) -> None:
        f = self.found
        if self.what == "command":
            f.command = (f.command + " " + line).strip() if line.strip() else f.command
        elif self.what == "env":
            name, sep, value = line.partition("=")
            if sep:
                f.env[name] = value
        else:
            sample, when, text = f.dumps[-1]
            f.dumps[-1] = (sample, when, text + line + "\n")
