"""Driver for the `driver-local-instance` and `driver-version-mismatch` scenarios.

* `--mode local`: `ray.init()` with no address, as vLLM does when RAY_ADDRESS is
  unset, on a node where no cluster runs. Ray starts a private single-node
  instance (`Started a local Ray instance.`), so the driver only sees this
  node's resources.
* `--mode auto`: `ray.init(address="auto")` with no cluster, which fails with
  `ConnectionError: Could not find any running Ray instance. ...`.
* `--mode address --address HOST:PORT`: `ray.init(address=HOST:PORT)`, used to
  connect a driver of one Ray version to a cluster of another.
  A `ray://HOST:PORT` address makes it a Ray Client driver (`client-gcs-port`).
* `--node-ip IP` (with `--mode address`): the driver says it runs on IP, an address
  no node of the cluster has (as on a multi-homed host where the driver and its
  raylet pick different interfaces).
* `--pip PKG`: the job's runtime environment asks for PKG from pip (`runtime_env={"pip": [PKG]}`), which Ray
  installs on the node before the task runs.
* `--task-gpus N`: the task asks for N GPUs (`num_gpus=N`); `--task-seconds S`: it sleeps S seconds first;
  `--get-timeout T`: the driver waits at most T seconds for it (`ray.get(..., timeout=T)`).
* `--task-resource NAME`: the task asks for one unit of the custom resource NAME.

Lines that this script prints itself start with `init_driver:`.
"""

import argparse
import sys
import time

import ray


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["local", "auto", "address"], required=True)
    ap.add_argument("--address")
    ap.add_argument("--node-ip")
    ap.add_argument("--pip")
    ap.add_argument("--task-gpus", type=float, default=0)
    ap.add_argument("--task-seconds", type=float, default=0)
    ap.add_argument("--get-timeout", type=float)
    ap.add_argument("--task-resource")
    args = ap.parse_args()

    print(f"init_driver: ray {ray.__version__}, python {sys.version.split()[0]}, mode={args.mode}", flush=True)
    runtime_env = {"runtime_env": {"pip": [args.pip]}} if args.pip else {}
    if args.mode == "local":
        print(f"init_driver: ray.init({runtime_env or ''})", flush=True)
        ray.init(**runtime_env)
    else:
        address = "auto" if args.mode == "auto" else args.address
        given = {"_node_ip_address": args.node_ip} if args.node_ip else {}
        print(f"init_driver: ray.init(address={address!r}, {given})", flush=True)
        ray.init(address=address, **given, **runtime_env)

    print(f"init_driver: cluster_resources={ray.cluster_resources()}", flush=True)
    print(f"init_driver: nodes alive={sum(1 for n in ray.nodes() if n['Alive'])}", flush=True)

    @ray.remote
    def where(seconds: float) -> str:
        time.sleep(seconds)
        return ray.util.get_node_ip_address()

    resources = {"resources": {args.task_resource: 1}} if args.task_resource else {}
    task = where.options(num_gpus=args.task_gpus, **resources).remote(args.task_seconds)
    print(f"init_driver: task submitted (num_gpus={args.task_gpus}, {resources})", flush=True)
    print(f"init_driver: task ran on {ray.get(task, timeout=args.get_timeout)}", flush=True)
    ray.shutdown()
    print("init_driver: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
