"""The core must import without any user-interface toolkit (architecture principle 1)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import builtins, sys
real = builtins.__import__
def guard(name, *args, **kwargs):
    if name.split('.')[0] in {'textual'}:
        raise ImportError('the core imported ' + name)
    return real(name, *args, **kwargs)
builtins.__import__ = guard
import sparktui.core.pipeline, sparktui.core.analysis.analyzer, sparktui.core.catalogue
from sparktui.core import catalogue
catalogue.load()
assert 'textual' not in sys.modules
print('ok')
"""


def test_core_imports_without_textual() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"


def test_the_command_line_loads_ssh_and_the_translator_only_when_used() -> None:
    """`sparktui diagnose` on files starts without asyncssh, the action runner or the SGLang translator."""
    probe = "import sys, sparktui.cli; print(sorted(m for m in LATE if m in sys.modules))"
    late = (
        "{'asyncssh', 'sparktui.core.remedy.actions', 'sparktui.core.launch.sglang_to_vllm', "
        "'sparktui.core.remedy.plan'}"
    )
    out = subprocess.run([sys.executable, "-c", f"LATE = {late}\n{probe}"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
