"""The one shell script that collects a node's inventory in one round trip, and the split of what it prints
into its sections.

Everything the script asks is read-only: ``uname``, ``/etc/os-release``, ``nvidia-smi`` queries, ``ip``,
the RDMA tools, ``df``, ``docker version / images / ps / inspect``, ``ray status`` inside the engine
container, the model's ``config.json``, the listening sockets of ``/proc/net/tcp``, and the in-image
probe (:mod:`sparktui.core.inventory.image_probe`, fed on stdin to ``docker exec -i`` into the running
engine container, or else to ``docker run --rm -i`` of the image). A tool that is missing is a section
that says so (``nvidia-smi: not installed``, exit 127), never a failed script.

Each section is framed by ``@@NONCE begin NAME`` and ``@@NONCE end NAME CODE``, with a random nonce for
each run, so nothing a command prints can open or close a section. Every value given to the script (the
image, the model, container names) is shell-quoted; the probe travels as a quoted here-document whose
delimiter carries the nonce.
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from sparktui.core.inventory import image_probe

#: Seconds ``ray status`` may take before it is cut off (it imports Ray and asks the GCS).
RAY_STATUS_TIMEOUT = 20
#: Seconds the in-image probe has in all (each of its parts has its own share; see image_probe).
PROBE_BUDGET = 60
#: Seconds past its budget the probe's ``docker exec`` or ``docker run`` may take before it is cut off: an
#: engine that never starts the probe (an exec hung in the runtime, a python3 that does not return) ends in
#: "no answer within N s" instead of holding the whole check.
PROBE_GRACE = 15
#: The most bytes of a config.json read (they are small; a huge one is not a config).
CONFIG_LIMIT = 1 << 20
#: Where the kernel lists RDMA devices and network devices (sysfs): what the fabric section reads.
IB_ROOT = "/sys/class/infiniband"
NET_ROOT = "/sys/class/net"
#: The words in a container's name, image or command that make it an engine container when none is named.
ENGINE_WORDS = "vllm|sglang|ray"

# Sections, in the order the script prints them.
SECTIONS = (
    "host",
    "os",
    "gpus",
    "cuda",
    "ip",
    "rdma",
    "fabric",
    "shm",
    "docker_version",
    "docker_images",
    "docker_ps",
    "container",
    "image",
    "model",
    "disk",
    "ports",
    "ray_status",
    "probe",
)


@dataclass(frozen=True, slots=True)
class Request:
    """What to look at on a node besides the node itself: the engine ``image`` and ``containers`` (their
    names, the first running one is probed; none named: the first running container whose name, image or
    command says vllm, sglang or ray), the ``model`` (a path or a Hugging Face repo id, as the launch names
    it) and whether to run the in-image probe."""

    image: str = ""
    containers: tuple[str, ...] = ()
    model: str = ""
    probe: bool = True
    probe_budget: int = PROBE_BUDGET


@dataclass(frozen=True, slots=True)
class Section:
    """What one part of the script printed (standard output and error together) and how it ended; ``code``
    is None when the section never ended (the script was cut off)."""

    name: str
    text: str
    code: int | None

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@dataclass(frozen=True, slots=True)
class Output:
    """A run's sections by name, and whatever was printed outside them (an SSH banner, the shell's errors)."""

    sections: dict[str, Section] = field(default_factory=dict)
    stray: tuple[str, ...] = ()

    def get(self, name: str) -> Section | None:
        return self.sections.get(name)


def nonce() -> str:
    return secrets.token_hex(8)


def probe_source() -> str:
    """The probe's own file: the module is the script."""
    return Path(image_probe.__file__).read_text(encoding="utf-8")


def script(request: Request, run: str) -> str:
    """The inventory script for one node, framed with nonce ``run``."""
    q = shlex.quote
    head = [
        f"N={q(run)}",
        f"image={q(request.image)}",
        f"model={q(request.model)}",
        f"set -- {' '.join(q(c) for c in request.containers)}".rstrip(),
        f"auto={0 if request.containers else 1}",
        f"budget={int(request.probe_budget)}",
        f"limit={CONFIG_LIMIT}",
        f"fmt_images={q(_IMAGES)}",
        f"fmt_ps={q(_CONTAINERS)}",
        f"ib={q(IB_ROOT)}",
        f"sysnet={q(NET_ROOT)}",
    ]
    helpers = _HELPERS.replace("@RAY_TIMEOUT@", str(RAY_STATUS_TIMEOUT)).replace("@ENGINE_WORDS@", ENGINE_WORDS)
    probe = _NO_PROBE
    if request.probe:
        heredoc = f"SPARKTUI_PROBE_{run}"
        source = probe_source()
        if any(line.strip() == heredoc for line in source.splitlines()):  # cannot happen with a random nonce
            raise ValueError("the probe contains its own delimiter")
        probe = (
            _PROBE.replace("@PROBE_GRACE@", str(PROBE_GRACE))
            .replace("@HEREDOC@", heredoc)
            .replace("@SOURCE@", source.rstrip("\n"))
        )
    quick = _QUICK.replace("@FABRIC@", FABRIC.strip("\n"))
    return "\n".join(head) + "\n" + helpers + probe + _START + quick + _FINISH


def split(lines: list[str], run: str) -> Output:
    """The sections of the output of :func:`script` run with nonce ``run``."""
    begin, end = f"@@{run} begin ", f"@@{run} end "
    sections: dict[str, Section] = {}
    stray: list[str] = []
    name: str | None = None
    body: list[str] = []
    for line in lines:
        if line.startswith(begin):
            if name is not None:  # a section that never ended: kept, without a code
                sections[name] = Section(name, "\n".join(body), None)
            name, body = line[len(begin) :].strip(), []
        elif line.startswith(end) and name is not None:
            words = line[len(end) :].split()
            code = int(words[1]) if len(words) > 1 and words[1].isdigit() else None
            sections[name] = Section(name, "\n".join(body), code)
            name, body = None, []
        elif name is not None:
            body.append(line)
        elif line.strip():
            stray.append(line)
    if name is not None:
        sections[name] = Section(name, "\n".join(body), None)
    return Output(sections, tuple(stray))


#: One line of JSON per image and per running container, with only the fields read (``{{json .}}`` would
#: carry every label, and a line can outgrow what a runner hands over whole).
_IMAGES = '{"Repository":{{json .Repository}},"Tag":{{json .Tag}},"Digest":{{json .Digest}},"ID":{{json .ID}}}'
_CONTAINERS = (
    '{"ID":{{json .ID}},"Names":{{json .Names}},"Image":{{json .Image}},'
    '"Command":{{json .Command}},"State":{{json .State}},"Ports":{{json .Ports}}}'
)

# The script's body: helpers; the engine container and image chosen (silently); ``ray status`` and the probe
# started in the background (each into a file of a private temporary folder, removed at the end), since
# they take seconds (Ray's CLI imports Ray; vLLM's imports take longer) while every other section takes
# milliseconds; the quick sections; then the two slow ones, waited for. Where no temporary folder can be
# made, the slow ones run in turn. `b NAME` opens a section, `e NAME` closes it with the status of the last
# command; `missing TOOL` says a tool is not installed (status 127).
_HELPERS = r"""
b() { echo "@@$N begin $1"; }
e() { echo "@@$N end $1 $?"; }
have() { command -v "$1" >/dev/null 2>&1; }
missing() { echo "$1: not installed"; return 127; }
cap() { if have timeout; then timeout "$@"; else shift; "$@"; fi; }
c=
if have docker; then
  for name in "$@"; do
    if [ "$(docker inspect --type container -f '{{.State.Running}}' -- "$name" 2>/dev/null)" = true ]; then
      c=$name; break
    fi
  done
  if [ -z "$c" ] && [ "$auto" = 1 ]; then
    c=$(docker ps --no-trunc --format '{{.Names}} {{.Image}} {{.Command}}' 2>/dev/null \
      | grep -Ei '@ENGINE_WORDS@' | head -n 1 | cut -d ' ' -f 1)
  fi
fi
img=$image
if [ -z "$img" ] && [ -n "$c" ]; then
  img=$(docker inspect --type container -f '{{.Config.Image}}' -- "$c" 2>/dev/null)
fi
ray_part() {
  if [ -n "$c" ]; then cap @RAY_TIMEOUT@ docker exec "$c" ray status 2>&1
  elif have ray; then cap @RAY_TIMEOUT@ ray status 2>&1
  else missing ray; fi
}
"""

_START = r"""
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparktui-inventory.XXXXXX" 2>/dev/null) || tmp=
if [ -n "$tmp" ]; then
  { ray_part >"$tmp/ray" 2>&1; echo $? >"$tmp/ray.rc"; } &
  { probe_part >"$tmp/probe" 2>&1; echo $? >"$tmp/probe.rc"; } &
fi
"""

_QUICK = r"""
b host; { uname -s; uname -r; uname -m; uname -n; } 2>&1; head -c 4096 /proc/cmdline 2>/dev/null; e host
b os; cat /etc/os-release 2>&1; e os
b gpus
if have nvidia-smi; then
  nvidia-smi --query-gpu=index,name,memory.total,driver_version,compute_cap,pci.bus_id \
    --format=csv,noheader,nounits 2>&1 \
  || nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id --format=csv,noheader,nounits 2>&1
else missing nvidia-smi; fi; e gpus
b cuda
if have nvidia-smi; then nvidia-smi --version 2>&1 || nvidia-smi 2>&1 | head -n 6; else missing nvidia-smi; fi; e cuda
b ip
if have ip; then ip -j -p addr show 2>/dev/null || ip -o addr show 2>&1; else missing ip; fi; e ip
b rdma
if have ibdev2netdev; then echo '# ibdev2netdev'; ibdev2netdev 2>&1
elif have rdma; then echo '# rdma link'; rdma link show 2>&1
else
  echo '# sysfs'
  for d in /sys/class/infiniband/*/device/net/*; do [ -e "$d" ] && echo "${d#/sys/class/infiniband/}"; done; true
fi; e rdma
b fabric
@FABRIC@
e fabric
b shm; df -Pk /dev/shm 2>&1; e shm
b docker_version
if have docker; then docker version --format '{{json .}}' 2>&1; else missing docker; fi; e docker_version
b docker_images
if have docker; then docker images --digests --no-trunc --format "$fmt_images" 2>&1; else missing docker; fi
e docker_images
b docker_ps
if have docker; then docker ps --no-trunc --format "$fmt_ps" 2>&1; else missing docker; fi; e docker_ps
b container
if [ -n "$c" ]; then docker inspect --type container -- "$c" 2>&1; else echo "no engine container running"; false; fi
e container
b image
if [ -z "$img" ]; then echo "no image named"; false
elif have docker; then docker image inspect -- "$img" 2>&1
else missing docker; fi; e image
case $model in
  "") p= ;;
  /*) p=$model ;;
  *) hub=${HF_HUB_CACHE:-${HF_HOME:-$HOME/.cache/huggingface}/hub}
     p=$hub/models--$(printf '%s' "$model" | sed 's|/|--|g')
     if [ -f "$p/refs/main" ]; then p=$p/snapshots/$(cat "$p/refs/main")
     else for s in "$p"/snapshots/*; do [ -d "$s" ] && p=$s && break; done; fi ;;
esac
b model
if [ -z "$p" ]; then echo "no model named"; false
elif [ -f "$p/config.json" ]; then
  echo "path $p"; ls -1 "$p" 2>&1 | head -n 200 | sed 's/^/file /'
  echo "config"; head -c "$limit" "$p/config.json" | base64
else echo "path $p"; echo "no config.json"; false; fi; e model
b disk
if [ -n "$p" ]; then
  d=$p; while [ ! -e "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done; df -Pk "$d" 2>&1
else df -Pk "${HF_HOME:-$HOME/.cache/huggingface}" 2>/dev/null || df -Pk "$HOME" 2>&1; fi; e disk
b ports; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" {print $2}'; e ports
"""

#: The fabric section's body, over ``$ib`` (/sys/class/infiniband) and ``$sysnet`` (/sys/class/net): one
#: tab-separated line per fact, read with the shell's own ``read`` (no process per file: a ConnectX port
#: has 256 GID slots). ``net DEV NETDEV`` (the device's network devices), ``port DEV N FILE VALUE`` (state,
#: phys_state, link_layer, rate), ``gid DEV N INDEX GID TYPE NETDEV`` for each GID that is not empty (an
#: empty slot's type and netdev cannot even be read), ``mtu NETDEV MTU`` for each network device named;
#: then ``ibv_devinfo`` where it is installed (the active MTU of InfiniBand ports is in no sysfs file).
FABRIC = r"""
nets=
if [ -d "$ib" ]; then
  for d in "$ib"/*; do
    [ -d "$d" ] || continue
    dev=${d##*/}
    for n in "$d"/device/net/*; do
      [ -e "$n" ] || continue
      printf 'net\t%s\t%s\n' "$dev" "${n##*/}"; nets="$nets ${n##*/}"
    done
    for p in "$d"/ports/*; do
      [ -d "$p" ] || continue
      port=${p##*/}
      for f in state phys_state link_layer rate; do
        v=; read -r v 2>/dev/null <"$p/$f"
        printf 'port\t%s\t%s\t%s\t%s\n' "$dev" "$port" "$f" "$v"
      done
      for g in "$p"/gids/*; do
        [ -f "$g" ] || continue
        i=${g##*/}; v=
        read -r v 2>/dev/null <"$g"
        case $v in ''|0000:0000:0000:0000:0000:0000:0000:0000) continue ;; esac
        t=; n=
        read -r t 2>/dev/null <"$p/gid_attrs/types/$i"
        read -r n 2>/dev/null <"$p/gid_attrs/ndevs/$i"
        printf 'gid\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dev" "$port" "$i" "$v" "$t" "$n"
        [ -n "$n" ] && nets="$nets $n"
      done
    done
  done
fi
for n in $(printf '%s\n' $nets | sort -u); do
  v=; read -r v 2>/dev/null <"$sysnet/$n/mtu"; printf 'mtu\t%s\t%s\n' "$n" "$v"
done
if [ -d "$ib" ] && have ibv_devinfo; then echo '# ibv_devinfo'; ibv_devinfo 2>&1; fi
true
"""

_FINISH = r"""
if [ -n "$tmp" ]; then
  wait
  b ray_status; cat "$tmp/ray"; (exit "$(cat "$tmp/ray.rc" 2>/dev/null || echo 1)"); e ray_status
  b probe; cat "$tmp/probe"; (exit "$(cat "$tmp/probe.rc" 2>/dev/null || echo 1)"); e probe
  rm -rf "$tmp"
else
  b ray_status; ray_part; e ray_status
  b probe; probe_part; e probe
fi
"""

_NO_PROBE = 'probe_part() { echo "probe not asked for"; return 1; }\n'
_PROBE = r"""src=$(cat <<'@HEREDOC@'
@SOURCE@
@HEREDOC@
)
late() { [ "$1" != 124 ] || echo "no answer within $t s"; return "$1"; }
probe_part() {
  t=$((budget + @PROBE_GRACE@))
  if [ -n "$c" ]; then
    echo "via container $c"
    printf '%s\n' "$src" | cap "$t" docker exec -i "$c" python3 - "$budget" "$model" 2>&1 || late $?
  elif [ -n "$img" ] && docker image inspect -- "$img" >/dev/null 2>&1; then
    echo "via image $img"
    printf '%s\n' "$src" | cap "$t" docker run --rm -i --network none --entrypoint python3 -- "$img" \
      - "$budget" "$model" 2>&1 || late $?
  else echo "nothing to probe: no engine container running and no image here"; return 1; fi
}
"""
