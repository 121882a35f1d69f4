# The inventory script (sparktui/core/inventory/script.py), in POSIX sh, sent as `sh -c` after the lines that
# set its values, each shell-quoted: N (the run's nonce), image, model, the containers as "$@", auto (1: none
# named, look for one), budget (the probe's seconds), grace (the seconds past it after which the probe's
# docker exec or run is cut off), limit (the most bytes of config.json), fmt_images and
# fmt_ps (docker's formats), ib and sysnet (sysfs), ray_timeout, engine_words (the words of an engine
# container, for grep -E), src (the in-image probe's Python, which also reads the host's own builds: the
# builds section runs it as `python3 - host`), probe_on (1: run it in the image too); and after fabric.sh,
# which defines fabric_part.
#
# Helpers; the engine container and image chosen (silently); `ray status` and the probe started in the
# background (each into a file of a private temporary folder, removed at the end), since they take seconds
# (Ray's CLI imports Ray; vLLM's imports take longer) while every other section takes milliseconds; the
# quick sections; then the two slow ones, waited for. Where no temporary folder can be made, the slow ones
# run in turn. `b NAME` opens a section, `e NAME` closes it with the status of the last command;
# `missing TOOL` says a tool is not installed (status 127).
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
      | grep -Ei -- "$engine_words" | head -n 1 | cut -d ' ' -f 1)
  fi
fi
img=$image
if [ -z "$img" ] && [ -n "$c" ]; then
  img=$(docker inspect --type container -f '{{.Config.Image}}' -- "$c" 2>/dev/null)
fi
ray_part() {
  if [ -n "$c" ]; then cap "$ray_timeout" docker exec "$c" ray status 2>&1
  elif have ray; then cap "$ray_timeout" ray status 2>&1
  else missing ray; fi
}
late() { [ "$1" != 124 ] || echo "no answer within $t s"; return "$1"; }
probe_part() {
  t=$((budget + grace))
  if [ "$probe_on" != 1 ]; then echo "probe not asked for"; return 1
  elif [ -n "$c" ]; then
    echo "via container $c"
    printf '%s\n' "$src" | cap "$t" docker exec -i "$c" python3 - "$budget" "$model" 2>&1 || late $?
  elif [ -n "$img" ] && docker image inspect -- "$img" >/dev/null 2>&1; then
    echo "via image $img"
    printf '%s\n' "$src" | cap "$t" docker run --rm -i --network none --entrypoint python3 -- "$img" \
      - "$budget" "$model" 2>&1 || late $?
  else echo "nothing to probe: no engine container running and no image here"; return 1; fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sparktui-inventory.XXXXXX" 2>/dev/null) || tmp=
if [ -n "$tmp" ]; then
  { ray_part >"$tmp/ray" 2>&1; echo $? >"$tmp/ray.rc"; } &
  { probe_part >"$tmp/probe" 2>&1; echo $? >"$tmp/probe.rc"; } &
fi

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
  for d in "$ib"/*/device/net/*; do [ -e "$d" ] && echo "${d#"$ib"/}"; done; true
fi; e rdma
b fabric; fabric_part; e fabric
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
b builds
if have python3; then printf '%s\n' "$src" | cap "$budget" python3 - host 2>&1
else missing python3; fi; e builds
b logind
echo "uid $(id -u)"
if have loginctl; then
  loginctl --version 2>/dev/null | head -n 1
  loginctl show -p RemoveIPC -p KillUserProcesses 2>/dev/null
  loginctl show-user "$(id -un)" -p Linger 2>/dev/null
fi
for f in /etc/systemd/logind.conf /etc/systemd/logind.conf.d/*.conf; do
  [ -f "$f" ] && grep -E '^[[:space:]#]*(RemoveIPC|KillUserProcesses)[[:space:]]*=' "$f" | sed "s|^|$f: |"
done
[ -e "/var/lib/systemd/linger/$(id -un)" ] && echo "linger file"; true; e logind
b ports; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk '$4 == "0A" {print $2}'; e ports

if [ -n "$tmp" ]; then
  wait
  b ray_status; cat "$tmp/ray"; (exit "$(cat "$tmp/ray.rc" 2>/dev/null || echo 1)"); e ray_status
  b probe; cat "$tmp/probe"; (exit "$(cat "$tmp/probe.rc" 2>/dev/null || echo 1)"); e probe
  rm -rf "$tmp"
else
  b ray_status; ray_part; e ray_status
  b probe; probe_part; e probe
fi
