"""A Ray job whose task keeps allocating memory until Ray's memory monitor kills its worker: the raylet logs
the kill, and the driver ends with the task's OutOfMemoryError, as a job that does not catch it does.
local_job.sh sets the monitor's threshold a little above what the machine uses now, so a few hundred MiB are
enough. Run by local_job.sh oom-killed, inside a network namespace with only loopback."""

import sys

import ray

#: What the task allocates at a time, and at most in all (the monitor kills it well before).
CHUNK = 64 << 20
MOST = 8 << 30


@ray.remote(max_retries=0)
def hog() -> int:
    held = []
    while len(held) * CHUNK < MOST:
        held.append(bytearray(CHUNK))
        held[-1][::4096] = b"x" * len(range(0, CHUNK, 4096))  # touch each page: resident, not just reserved
    return len(held)


def main(temp_dir: str) -> None:
    ray.init(num_cpus=1, include_dashboard=False, _temp_dir=temp_dir)
    print("chunks held:", ray.get(hog.remote()), flush=True)  # raises the task's OutOfMemoryError, uncaught


if __name__ == "__main__":
    main(sys.argv[1])
