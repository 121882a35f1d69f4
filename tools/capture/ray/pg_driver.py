"""Driver for the `gpu-placement-group-infeasible` capture scenario.

Connects to an existing Ray cluster the way vLLM's Ray executor does
(`ray.init(address=...)`) and asks for a placement group of N `{"GPU": 1.0}`
bundles with the PACK strategy (what vLLM requests for tensor_parallel_size=N).
On a cluster without enough GPUs the group never becomes ready; the driver
waits a bounded time, prints the placement group table, the cluster resources
and `ray status`, then removes the group and exits.

Lines that this script prints itself start with `pg_driver:`; everything else
is Ray's own output.
"""

import argparse
import os
import subprocess
import sys
import time

import ray
from ray.util.placement_group import placement_group, placement_group_table, remove_placement_group


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--address", required=True)
    ap.add_argument("--bundles", type=int, default=2)
    ap.add_argument("--wait", type=float, default=65.0, help="seconds to wait for the group")
    ap.add_argument("--poll", type=float, default=10.0)
    args = ap.parse_args()

    print(f"pg_driver: ray {ray.__version__}, ray.init(address={args.address!r})", flush=True)
    ray.init(address=args.address)
    print(f"pg_driver: cluster_resources={ray.cluster_resources()}", flush=True)
    print(f"pg_driver: nodes alive={sum(1 for n in ray.nodes() if n['Alive'])}", flush=True)

    bundles = [{"GPU": 1.0} for _ in range(args.bundles)]
    print(f"pg_driver: placement_group({bundles}, strategy='PACK')", flush=True)
    pg = placement_group(bundles, strategy="PACK")

    start = time.time()
    ready = False
    while time.time() - start < args.wait:
        done, _ = ray.wait([pg.ready()], timeout=args.poll)
        if done:
            ready = True
            break
        print(f"pg_driver: placement group not ready after {time.time() - start:.0f} s", flush=True)

    print(f"pg_driver: ready={ready}", flush=True)
    print(f"pg_driver: placement_group_table={placement_group_table(pg)}", flush=True)
    print(f"pg_driver: available_resources={ray.available_resources()}", flush=True)
    print("pg_driver: ray status:", flush=True)
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    subprocess.run([ray_bin, "status", "--address", args.address], check=False)
    sys.stdout.flush()

    remove_placement_group(pg)
    ray.shutdown()
    print("pg_driver: done", flush=True)
    return 0 if ready else 2


if __name__ == "__main__":
    sys.exit(main())
