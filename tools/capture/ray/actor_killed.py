"""A healthy Ray job that kills one of its actors on purpose, then ends: the GCS and the raylet log the kill
and the job's teardown at INFO and WARNING level, quoting the RpcError of the socket the killed worker closed.
Run by local_job.sh actor-killed, inside a network namespace with only loopback."""

import sys
import time

import ray


@ray.remote
class Counter:
    def count(self) -> int:
        return 1


def main(temp_dir: str) -> None:
    ray.init(num_cpus=1, include_dashboard=False, _temp_dir=temp_dir)
    first = Counter.remote()
    print("first actor:", ray.get(first.count.remote()), flush=True)
    ray.kill(first)
    time.sleep(1)
    second = Counter.remote()
    print("second actor:", ray.get(second.count.remote()), flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
