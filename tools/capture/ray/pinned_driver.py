"""Driver for the `worker-node-killed` capture scenario.

Connects to an existing cluster (`ray.init(address=...)`), starts an actor and a task that a custom resource
pins to the worker node, and waits on them. The capture script kills that node's raylet while they run: the
driver then shows what Ray reports for work lost with its node (the errors of `ray.get`, each bounded by
`--wait`: a task lost with its node can stay pending for good, which `ray.get` reports as `GetTimeoutError`).

Lines that this script prints itself start with `pinned_driver:`; everything else is Ray's own output.
"""

import argparse
import sys
import time

import ray


@ray.remote
class Holder:
    def where(self) -> str:
        return ray.util.get_node_ip_address()

    def work(self, seconds: float) -> str:
        time.sleep(seconds)
        return "done"


@ray.remote
def long_task(seconds: float) -> str:
    time.sleep(seconds)
    return ray.util.get_node_ip_address()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--address", required=True)
    ap.add_argument("--resource", required=True, help="a custom resource only the worker node has")
    ap.add_argument("--seconds", type=float, default=300.0, help="how long the actor's call and the task run")
    ap.add_argument("--wait", type=float, default=90.0, help="how long to wait on each of them")
    args = ap.parse_args()

    ray.init(address=args.address)
    pin = {args.resource: 0.5}
    holder = Holder.options(resources=pin).remote()
    print(f"pinned_driver: actor running on {ray.get(holder.where.remote())}", flush=True)
    call = holder.work.remote(args.seconds)
    task = long_task.options(resources=pin, max_retries=0).remote(args.seconds)
    print("pinned_driver: actor call and task started", flush=True)
    failed = 0
    for name, ref in (("actor call", call), ("task", task)):
        try:
            print(f"pinned_driver: {name} returned {ray.get(ref, timeout=args.wait)}", flush=True)
        except ray.exceptions.RayError as e:
            failed += 1
            print(f"pinned_driver: {name} failed: {type(e).__name__}", flush=True)
            print(e, flush=True)
    ray.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
